"""The `privrl` command line (console script and `python -m privrl`): run / plot / report sweeps and
the demo, the main job comparing non-private, JDP and LDP regret (Sec. 3-5); it only parses and prints."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from privrl.common.errors import PrivrlError
from privrl.experiment.parsing import flag_list as _list
from privrl.experiment.parsing import flag_literal as _literal
from privrl.experiment.parsing import toml_float
from privrl.experiment.parsing import top_level_items as _top_level_items

#: The files of a results folder the sweep writes (besides runs/): `report --csv` must not replace them.
RESULT_FILES = ("manifest.json", "results.parquet", "results.csv")
DEMO_CONFIG = "demo.toml"
DEMO_BANDIT_CONFIG = "demo_bandit.toml"


def cmd_kernels(args: argparse.Namespace) -> int:
    from privrl.kernels.demo import kernel_demo

    kernel_demo()
    return 0


def _pairs(text: str, flag: str, seen: dict | None = None) -> dict:
    """K=V,... as a dict; a key given twice (here or in `seen`, the flag's earlier items) is refused:
    the last value silently won (beta_scale=0.1,beta_scale=0.2 ran at 0.2)."""
    out: dict = {}
    for item in _top_level_items(text):
        if "=" not in item:
            raise PrivrlError(f"{flag}: expected key=value, got {item!r}")
        k, v = (t.strip() for t in item.split("=", 1))
        earlier = out if k in out else (seen or {})
        if k in earlier:
            raise PrivrlError(f"{flag}: {k} is given twice ({earlier[k]!r} and {v}); give it once")
        out[k] = _literal(v)
    return out


def _float_flag(text: str) -> float:
    """--delta as argparse's float, refused where a double cannot hold it (toml_float: 1e-400 was 0)."""
    try:
        return toml_float(text)
    except ValueError as exc:  # float()'s, or toml_float's ConfigError
        raise argparse.ArgumentTypeError(
            str(exc) if str(exc).startswith("the number") else f"invalid float value: {text!r}"
        ) from None


def _sweep_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The top-level keys the flags set (a flag left out keeps the config's value)."""
    keys = ("episodes", "delta", "log_every", "n_jobs", "backend", "root_seed", "format", "scheduler")
    out = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    if args.seeds is not None:
        seeds = _list(args.seeds)
        one_count = len(seeds) == 1 and "," not in args.seeds and not args.seeds.startswith("[")
        out["seeds"] = seeds[0] if one_count else seeds
    if args.epsilons is not None:
        out["epsilons"] = _list(args.epsilons)
    return out


# Sweep flags that also replace an agent's own value in a config: key -> what it is.
_AGENT_OVERRIDES = {"epsilons": "the list", "delta": "delta"}

# Agent keys that also have a flag: (flag, key, the privacy kinds it applies to).
_AGENT_FLAGS = (
    ("--calibration", "calibration", ("none", "jdp", "ldp")),
    ("--mechanism", "mechanism", ("jdp",)),
    ("--exploration", "exploration", ("none", "jdp", "ldp")),
)


def _flag_agents(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The --agent agents, with --calibration / --mechanism filled in where an agent does not set
    them itself (only for the privacy kinds and algorithms they mean something to)."""
    from privrl.experiment.config import PRIVACY_KINDS, ConfigError
    from privrl.experiment.registry import flag_targets

    agents = {}
    for item in args.agent or ():
        name, _, rest = item.partition(":")
        if not name or not rest:
            raise ConfigError("--agent", f"expected NAME:algorithm=...,privacy=...; got {item!r}")
        if name in agents:  # a TOML table cannot repeat a key either: the first was dropped
            raise ConfigError("--agent", f"two agents named {name!r}")
        agents[name] = _pairs(rest, f"--agent {name}")
        given = [k for k in _AGENT_OVERRIDES if getattr(args, k) is not None and k in agents[name]]
        if given:
            key = given[0]
            raise ConfigError(
                f"--{key}",
                f"an --agent sets its own {key} too: give {_AGENT_OVERRIDES[key]} once, in one or the other",
            )
    for flag, key, kinds in _AGENT_FLAGS:
        value = getattr(args, key)
        if value is None:
            continue
        if not agents:
            raise ConfigError(
                flag, f"applies to --agent agents; in a config file, set {key} in the agent's table"
            )
        for agent in flag_targets(list(agents.values()), flag, key, kinds, PRIVACY_KINDS):
            agent.setdefault(key, value)
    return agents


def _env_flags(raw: dict, args: argparse.Namespace) -> None:
    """--env and --env-arg into the config's env."""
    from privrl.experiment.config import ConfigError

    if args.env is not None:
        if raw.get("env") is not None:  # the config's table, whose arguments go with it (said, not silent)
            print(f"privrl: --env replaces the config's env {raw['env']!r}", file=sys.stderr)
        raw["env"] = {"name": args.env}
    if args.env_arg:
        if isinstance(raw.get("env"), str):  # env = "RiverSwimMixture" in the config
            raw["env"] = {"name": raw["env"]}
        if not isinstance(raw.get("env"), dict):
            raise ConfigError("--env-arg", "give --env NAME (or env in the config) first")
        given: dict = {}  # across repeated --env-arg flags (they override the config's env, not each other)
        for item in args.env_arg:
            given.update(_pairs(item, "--env-arg", given))
        raw["env"].update(given)


def _raw_config(args: argparse.Namespace) -> dict:
    """The config mapping: the TOML file (if any) with the command-line flags on top."""
    from privrl.experiment.config import _STUDY_KEYS, ConfigError
    from privrl.experiment.parsing import read_config

    raw = read_config(args.config) if args.config is not None else {}
    flags = _sweep_flags(args)
    raw.update(flags)
    studies = raw.get("study")
    per_study = {k: v for k, v in flags.items() if k in _STUDY_KEYS}
    # a flag overrides a study's own value too (-K on the demo config); [study] is one table
    if isinstance(studies, dict):
        raw["study"] = {**studies, **per_study}
    elif isinstance(studies, list):
        raw["study"] = [{**s, **per_study} if isinstance(s, dict) else s for s in studies]
    _override_agent_keys(raw, flags)
    agents = _flag_agents(args)
    if (args.env is not None or args.env_arg or agents) and "study" in raw:
        raise ConfigError(
            "--env/--agent", "the config has [[study]] tables; edit them instead of using flags"
        )
    _env_flags(raw, args)
    if agents:
        if isinstance(raw.get("agents"), dict) and raw["agents"]:  # all of them: said, as --epsilons says
            print(
                f"privrl: --agent replaces the config's agents {', '.join(map(repr, raw['agents']))}",
                file=sys.stderr,
            )
        raw["agents"] = agents
    elif args.config is None and raw:  # flags alone: the agents can only come from --agent
        env = "" if "env" in raw else "--env NAME and "
        raise ConfigError(
            "--agent",
            f"missing: give {env}one --agent NAME:algorithm=...,privacy=... per agent (or a config file)",
        )
    return raw


def _override_agent_keys(raw: dict, flags: dict) -> None:
    """--epsilons and --delta replace the config's agents' own epsilons lists and deltas too (each
    replaced one is named on stderr): a flag sets that value for every run, as -K sets every run's K."""
    studies = raw.get("study")
    tables = [raw] + ([studies] if isinstance(studies, dict) else list(studies or ()))
    for key in _AGENT_OVERRIDES:
        if key not in flags:
            continue
        replaced = []
        for table in tables:
            agents = table.get("agents") if isinstance(table, dict) else None
            if not isinstance(agents, dict):  # a malformed one is the config checks' to name
                continue
            study = table.get("name") if table is not raw else None  # two studies may share an agent name
            for name, spec in agents.items():
                if isinstance(spec, dict) and key in spec:
                    agents[name] = {**spec, key: flags[key]}
                    replaced.append(f"{name!r} ({study})" if isinstance(study, str) else repr(name))
        if replaced:
            print(f"privrl: --{key} replaces the {key} of {', '.join(replaced)}", file=sys.stderr)


def _user_path(arg: str) -> str:
    """A path argument with a leading ~ expanded, as a shell does unquoted (a quoted '~/x' made a
    folder named ~ in the working directory, and pandas then wrote to the home's x)."""
    return os.path.expanduser(arg)


def _default_outdir(raw: dict) -> str:
    """The config's outdir (``~/x`` as the home's x, as the results are written there), or
    privrl-results/<name>."""
    return _user_path(str(raw.get("outdir") or Path("privrl-results") / str(raw.get("name", "sweep"))))


def _run_and_show(
    raw: dict,
    outdir: str,
    args: argparse.Namespace,
    plot: bool,
    report: bool,
    plot_output: str | None = None,
    intro: Any = None,
) -> int:
    from privrl.experiment import build_config, run_sweep
    from privrl.experiment.cost_plot import figures as draw
    from privrl.experiment.summary import report as show

    config = build_config(raw)  # checks the config's band too
    band = raw.get("band", "std")  # the plot's band (--plot); the config key was accepted and ignored
    runs = config.runs()
    where = config.scheduler or (f"{config.n_jobs} {config.backend}" if config.n_jobs > 1 else "1 process")

    def header() -> None:  # printed once the config passed every check (the agents built), not before
        if intro is not None:  # the demo's calibration comparison: after the checks too
            intro()
        print(
            f"privrl: {len(runs)} runs ({sum(r.episodes for r in runs):,} episodes) on {where} -> {outdir}",
            file=sys.stderr,
        )

    # --progress: the bars; --no-progress: none; neither: only when stderr is a terminal (a log
    # file or a pipe would fill with carriage-return redraws)
    progress = True if args.progress else False if args.no_progress else None
    t0 = time.perf_counter()
    try:
        _, manifest = run_sweep(config, outdir, progress=progress, resume=not args.fresh, on_start=header)
    except KeyboardInterrupt:
        print(
            f"\nprivrl: interrupted; finished runs are saved in {outdir}; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    took = time.perf_counter() - t0
    print(
        f"privrl: {manifest['n_computed']} runs computed, {manifest['n_resumed']} resumed, in {took:.1f} s; "
        f"results in {outdir}/{manifest['results_file']}",
        file=sys.stderr,
    )
    if report:
        show(outdir)
    if plot:
        figures = draw(outdir, plot_output, band)
        for what, out in zip(("plot", "privacy cost (vs epsilon)"), figures, strict=True):
            files = [v for v in (out or {}).values() if isinstance(v, str)]
            if files:
                print(f"privrl: {what} written to {', '.join(files[:-1])} and {files[-1]}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    raw = _raw_config(args)
    if not raw:
        raise PrivrlError("give a CONFIG.toml or --env and --agent flags (see `privrl run --help`)")
    outdir = args.out or _default_outdir(raw)
    return _run_and_show(raw, outdir, args, plot=args.plot, report=args.report)


def demo_config_text(bandit: bool = False) -> str:
    from importlib.resources import files

    name = DEMO_BANDIT_CONFIG if bandit else DEMO_CONFIG
    return (files("privrl.experiment") / "configs" / name).read_text()


def _drop_unavailable(raw: dict) -> dict:
    """The demo config without agents whose algorithm this install lacks (each skip is announced)."""
    from privrl.experiment.config import ConfigError, resolve_algorithm

    studies = []
    for study in raw.get("study", []):
        agents = {}
        for name, spec in study["agents"].items():
            try:
                resolve_algorithm(spec["algorithm"])
                agents[name] = spec
            except ConfigError as exc:
                print(f"privrl: demo: skipping {name!r} ({exc})", file=sys.stderr)
        if agents:
            studies.append({**study, "agents": agents})
    return {**raw, "study": studies}


def _print_calibration_comparison(raw: dict) -> None:
    """Paper vs tight noise of the demo's private agents at eps = 1 (what the tight curves buy)."""
    from privrl.audit.comparison import calibration_comparison, format_calibration_comparison
    from privrl.experiment.config import make_env

    delta = float(raw.get("delta", 1e-5))
    print("Privacy noise, paper calibration vs the tight accountant (same releases, same (eps, delta)):")
    for study in raw.get("study", []):
        env, K = make_env(study["env"]), int(study["episodes"])
        private = {
            (spec["algorithm"], spec["privacy"])
            for spec in study["agents"].values()
            if spec.get("privacy") != "none"
        }
        for alg, kind in sorted(private):
            key = {"UCRL-VTR": "ucrl_vtr", "UCRL-VTR+": "ucrl_vtr_plus", "LSVI-UCB": "lsvi_ucb"}.get(alg)
            if key is None:
                continue
            extra = {"C_w": env.C_w} if key != "lsvi_ucb" else {}
            cmp = calibration_comparison(key, kind, 1.0, delta, env.H, K, env.d, **extra)
            print(format_calibration_comparison(cmp))
    print()


def cmd_demo(args: argparse.Namespace) -> int:
    bandit = bool(getattr(args, "bandit", False))
    if args.print_config:
        print(demo_config_text(bandit), end="")
        return 0
    from privrl.experiment.config import ConfigError
    from privrl.experiment.parsing import _tomllib

    K = args.episodes
    if K is not None and K < 1:  # refused before the calibration table is printed
        raise ConfigError("--episodes", f"must be an integer >= 1, got {K}")
    raw = _drop_unavailable(_tomllib().loads(demo_config_text(bandit)))
    if K is not None:  # every study (without -K: the config's K and log_every, as they are)
        raw["study"] = [{**s, "episodes": K, "log_every": max(1, K // 100)} for s in raw["study"]]
    # -j 0 is refused as `privrl run` refuses it (it ran on every core)
    raw["n_jobs"] = args.n_jobs if args.n_jobs is not None else min(os.cpu_count() or 1, 8)
    for key in ("backend", "scheduler"):  # a flag left out keeps the config's value
        if getattr(args, key):
            raw[key] = getattr(args, key)
    outdir = args.out or _user_path(str(raw.pop("outdir", "privrl-demo")))
    raw.pop("outdir", None)
    t0 = time.perf_counter()
    intro = None if bandit else (lambda: _print_calibration_comparison(raw))
    code = _run_and_show(raw, outdir, args, plot=True, report=True, plot_output=args.plot_output, intro=intro)
    if code == 0:
        print(f"privrl: demo finished in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return code


def cmd_plot(args: argparse.Namespace) -> int:
    from privrl.experiment.cost_plot import figures

    out, cost = figures(args.outdir, args.output, args.band)
    for res, counted, what in ((out, "curves", "curves"), (cost or {}, "agents", "private agents")):
        if res:
            counts = ", ".join(f"{k}: {v} {what}" for k, v in res[counted].items())
            print("\n".join(v for k, v in res.items() if k != counted) + f"\n({counts})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from privrl.experiment.config import ConfigError
    from privrl.experiment.summary import report

    if args.csv and Path(args.csv).is_dir():  # refused before the table is printed
        raise ConfigError("--csv", f"{args.csv} is a folder; give a file name such as {args.csv}/summary.csv")
    own, csv = (Path(p).expanduser().resolve() for p in (args.outdir, args.csv or "."))
    if args.csv and (own / "runs" in csv.parents or csv in {own / f for f in RESULT_FILES}):  # replaced
        raise ConfigError("--csv", f"{args.csv} is a file of the results folder (the table would replace it)")
    summary = report(args.outdir)
    if args.csv:  # its folder made, as `privrl plot --output` makes its own (pandas refused a new one)
        Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
        summary.to_csv(args.csv, index=False)
    return 0


def _parser() -> argparse.ArgumentParser:
    # The privacy models list the calibrations and mechanisms they accept; the flags take exactly those.
    from privrl.agents.common.base import EXPLORATIONS
    from privrl.privacy.common import PRACTICAL_RULES
    from privrl.privacy.continual import resolve_mechanism
    from privrl.privacy.models import CALIBRATIONS, MECHANISMS

    # what mechanism=None gives, read off the one rule (resolve_mechanism), not restated here
    gaussian_default = resolve_mechanism("jdp", PRACTICAL_RULES[0], pure=False)
    others = {
        resolve_mechanism("jdp", c, pure=pure)
        for c in CALIBRATIONS
        for pure in (False, True)
        if pure or c not in PRACTICAL_RULES
    }
    other_default = " / ".join(sorted(others))

    ap = argparse.ArgumentParser(
        prog="privrl",
        description="Differentially private exploration in linear RL: regret sweeps, plots and reports",
        epilog=f"Documentation (README.md, harness.md, privacy.md, ...): {docs_dir()} (`privrl docs`)",
    )
    from privrl import __version__

    ap.add_argument("--version", action="version", version=f"privrl {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    def sweep_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--out",
            "-o",
            type=_user_path,
            help="results folder (default: outdir of the config, else privrl-results/NAME)",
        )
        p.add_argument("--n-jobs", "-j", type=int, help="local workers (-1: all cores)")
        p.add_argument(
            "--backend",
            choices=["threads", "processes"],
            help="local workers are threads (default; the Rust agents release the GIL) or processes",
        )
        p.add_argument(
            "--scheduler", help="run on a Dask cluster, e.g. tcp://host:8786 (pip install privrl[dask])"
        )
        shown = p.add_mutually_exclusive_group()
        shown.add_argument(
            "--progress",
            action="store_true",
            help="progress bars even when stderr is not a terminal (default: only in a terminal)",
        )
        shown.add_argument("--no-progress", action="store_true", help="no progress bars")
        p.add_argument("--fresh", action="store_true", help="recompute every run instead of resuming")

    run = sub.add_parser("run", help="run a sweep from a TOML config and/or flags (resumable)")
    run.add_argument(
        "config",
        nargs="?",
        type=_user_path,
        help="sweep config (TOML, or a results folder's manifest.json: its recorded config); flags below "
        "override its top-level keys",
    )
    sweep_flags(run)
    run.add_argument("--episodes", "-K", type=int, help="episodes K per run")
    run.add_argument("--seeds", help="a count (5) or a list (0,1,2)")
    run.add_argument(
        "--epsilons",
        help="comma list, inf = non-private (inf,10,1); replaces the config's lists, an agent's own too",
    )
    run.add_argument(
        "--delta",
        type=_float_flag,
        help="delta of (eps, delta)-DP, 0 = pure DP; replaces the config's delta, an agent's own too",
    )
    run.add_argument("--log-every", type=int, help="keep one row every N episodes (and the last)")
    run.add_argument("--root-seed", type=int, help="root of every run's SeedSequence (default 0)")
    run.add_argument(
        "--format",
        choices=["auto", "parquet", "csv"],
        help="results file format (auto: parquet if pyarrow is installed)",
    )
    run.add_argument("--env", help="environment name (RiverSwimMixture, RandomLinearMDP, ...)")
    run.add_argument("--env-arg", action="append", metavar="K=V,...", help="environment keyword arguments")
    run.add_argument(
        "--agent",
        action="append",
        metavar="NAME:K=V,...",
        help="an agent, e.g. 'LDP-UCRL-VTR:algorithm=UCRL-VTR,privacy=ldp,beta_scale=0.1' (repeatable)",
    )
    run.add_argument(
        "--calibration",
        choices=CALIBRATIONS,
        help="calibration of every --agent that does not set its own (default: adaptive; the "
        "paper's is 'paper'; a non-private agent takes the calibration's regret side)",
    )
    run.add_argument(
        "--exploration",
        choices=EXPLORATIONS,
        help="exploration rule of every --agent that does not set its own (default: the algorithm's: "
        "optimism for UCRL-VTR and UCRL-VTR+, sampling for LinUCB, and for LSVI-UCB sampling under "
        "the adaptive calibration, optimism under the others)",
    )
    run.add_argument(
        "--mechanism",
        choices=MECHANISMS,
        help="continual-release mechanism of every jdp --agent that does not set its own (default: "
        f"{gaussian_default} under the {' and '.join(PRACTICAL_RULES)} calibrations with delta > 0, "
        f"else {other_default}; all but the tree need delta > 0)",
    )
    run.add_argument("--plot", action="store_true", help="also draw OUT/regret.png, .svg and regret_cost.*")
    run.add_argument("--report", action="store_true", help="also print the report table")
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser("demo", help="the main job: non-private vs JDP vs LDP regret (bundled config)")
    sweep_flags(demo)
    demo.add_argument(
        "--episodes",
        "-K",
        type=int,
        help="episodes K per run, >= 1 (default: the bundled config's, 10,000; 20,000 with --bandit); "
        "a row is kept every K/100 episodes",
    )
    demo.add_argument(
        "--plot-output",
        type=_user_path,
        help="where to write the plot (default OUT/regret.png; a .pdf path adds a PDF)",
    )
    demo.add_argument("--print-config", action="store_true", help="print the bundled demo config and exit")
    demo.add_argument(
        "--bandit",
        action="store_true",
        help="the contextual-bandit demo: LinUCB on digits, non-private vs JDP (needs scikit-learn)",
    )
    demo.set_defaults(func=cmd_demo)

    p = sub.add_parser("plot", help="draw the regret curves (PNG + SVG) and regret vs epsilon (+ _cost)")
    p.add_argument("outdir", type=_user_path)
    p.add_argument(
        "--output",
        "-o",
        type=_user_path,
        help="file stem or .png / .svg path; a .pdf (.eps, .ps, .jpg, .tif, .webp) path also writes "
        "that file (default OUTDIR/regret)",
    )
    p.add_argument("--band", choices=["std", "ci95"], default="std", help="band across seeds")
    p.set_defaults(func=cmd_plot)

    r = sub.add_parser("report", help="print the summary table of a results folder")
    r.add_argument("outdir", type=_user_path)
    r.add_argument("--csv", type=_user_path, help="also write the table to this CSV file")
    r.set_defaults(func=cmd_report)

    docs = sub.add_parser("docs", help="where the documentation is installed, and its files")
    docs.set_defaults(func=_docs)
    k = sub.add_parser("kernels", help="a short tour of the Rust kernels")
    k.set_defaults(func=cmd_kernels)
    return ap


def docs_dir() -> Path:
    """The documentation a user has: installed with the wheel under <prefix>/share/privrl/docs,
    or, in a source checkout, its docs/ folder."""
    installed = Path(sys.prefix) / "share" / "privrl" / "docs"
    source = Path(__file__).resolve().parents[2] / "docs"
    return installed if installed.is_dir() or not source.is_dir() else source


def _docs(args: argparse.Namespace) -> int:
    where = docs_dir()
    print(where)
    for f in sorted(where.glob("*.md")) if where.is_dir() else []:
        print(f"  {f.name}")
    return 0


def _one_line_warnings() -> Any:
    """warnings.showwarning for the command line: `privrl: warning: <category>: <message>`, each
    message once (Python's format named a line of privrl's own source and printed that line; and,
    its registry reset by every catch_warnings in between, repeated one message once per run)."""
    shown: set[str] = set()

    def show(
        message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        text = f"privrl: warning: {category.__name__}: {message}"
        if text not in shown:
            shown.add(text)
            print(text, file=sys.stderr if file is None else file)

    return show


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if getattr(args, "func", None) is None:
        ap.print_help()
        return 2
    from privrl.experiment.config import SweepError

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings()
            return int(args.func(args))
    except (PrivrlError, ImportError, FileNotFoundError) as exc:
        # Bad input is the user's to fix: one line, argparse's convention and exit status; a
        # SweepError's config was fine, some runs raised (their tracebacks are in manifest.json): 1
        print(f"privrl: error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, SweepError) else 2
    except MemoryError as exc:  # numpy's, for an environment too large to build (an agent: ResourceError)
        print(f"privrl: error: out of memory: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `privrl report ... | head` closed the pipe: stop quietly, like head's peers
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
    except OSError as exc:  # an output folder that cannot be written (permissions, a file in the path)
        where = f": {exc.filename}" if exc.filename else ""
        print(f"privrl: error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
