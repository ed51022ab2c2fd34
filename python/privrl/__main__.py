"""`python -m privrl` is the `privrl` command line (see privrl.cli)."""
from privrl.cli import main

raise SystemExit(main())
