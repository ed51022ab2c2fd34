"""`python -m privrl`: the same command line as the `privrl` console script (privrl.experiment.cli),
for environments where the script directory is not on PATH."""

from privrl.experiment.cli import main

raise SystemExit(main())
