"""The 'fleet' command: nodes' check or run --gpus all folders side by side (stages/fleet), the nodes to
drain. Writes fleet.md, fleet.html and fleet.json; exit status 0 healthy, 1 a node to drain, 2 could not
judge."""
import os
import sys

from gpubench_driver.lib import document as page, noise_model, outputs
from gpubench_driver.lib.formatting import md, percent
from gpubench_driver.lib.sections import table_section
from gpubench_driver.stages import fleet, render, session
from gpubench_driver.stages.check_render import value_text

SCHEMA, VERSION = "gpubench-fleet", 1
ERRORS = ()  # fleet reports its own failures as exit status 2: cli's exit 1 would read as a node to drain
BOUND_TITLES = {fleet.GPU_BOUND: "GPU-bound figures", fleet.LINK: "Peer links (fraction of each link's rate)",
                fleet.HOST_PACED: "Host-paced figures (the host's: reported, no node drained for them)"}


def register(subparsers):
    parser = subparsers.add_parser(
        "fleet", help="many nodes' check or run --gpus all folders side by side: the slow GPUs, links and nodes to "
                      "drain; exit status 0 healthy, 1 drain, 2 not judged",
        description="Read the `check --gpus all` (check.json) or `run --gpus all` (results.json) folder of each node, "
                    "group the GPUs by model and set each GPU's figures against the fleet's median of its model with "
                    "the noise model's threshold for the figure's kind (host-paced figures apart, as the host's), the "
                    "peer links against the median fraction of their link's rate, and list the nodes to drain. "
                    "Writes fleet.md, fleet.html and fleet.json; exit status 0 healthy, 1 a node to drain, 2 could "
                    "not judge.")
    parser.add_argument("nodes", nargs="+", metavar="DIR", help="a node's output folder (its name names the node)")
    parser.add_argument("--out", help="output directory (default: results/runs/fleet-<UTC time>)")
    parser.add_argument("--noise-model", default=noise_model.FILE, metavar="FILE",
                        help="the noise model (default: %(default)s)")
    return parser


def _number(value, unit):
    return percent(value) if unit == "of link rate" else value_text({"value": value, "unit": unit})


def _group_row(group):
    below = "; ".join(f"{md(row['node'])}{'' if row['gpu'] is None else ' GPU ' + str(row['gpu'])} "
                      f"{row['ratio']:.3f}" for row in group["below"])
    noise = (f"{percent(group['beyond_noise'])} ({group['kind']})", percent(group["detectable"])) if group["kind"] \
        else (f"not judged (fewer than {fleet.FEWEST})", "-")
    return [md(group["figure"]), md(group["where"]), str(group["members"]), _number(group["median"], group["unit"]),
            *noise, below or "none"]


def blocks(nodes, skipped, groups, verdict):
    drain = [node for node in nodes if node["verdict"] == fleet.DRAIN]
    lines = [f"{len(nodes)} node(s) read, {len(skipped)} skipped. Verdict: **{verdict}**"
             + (f": drain {', '.join(md(node['name']) for node in drain)}." if drain else ".")]
    found = [page.Heading(1, "gpubench fleet"), page.paragraph(*lines)]
    found += table_section("Nodes to drain", ["node", "below"], drain,
                           lambda node: [md(node["name"]), md("; ".join(node["below"]))])
    found += page.section("Nodes", [page.table(["node", "from", "GPUs", "verdict", "notes"], [
        [md(node["name"]), md(node["path"]), ", ".join(map(str, node["gpus"])), node["verdict"],
         md("; ".join(node["errors"] + [f"host-paced below: {text}" for text in node["host"]])) or "-"]
        for node in nodes])])
    if skipped:
        found += page.section("Skipped (could not be read)", [page.bullets(md(why) for why in skipped)])
    header = ["figure", "point", "measured", "fleet median", "beyond noise from", "detectable (80%)", "below"]
    for model in dict.fromkeys(group["model"] for group in groups):
        for bound, title in BOUND_TITLES.items():
            rows = [_group_row(group) for group in groups if group["model"] == model and group["bound"] == bound]
            if rows:
                found += page.section(f"{md(model)}: {title}", [page.table(header, rows)])
    found.append(page.paragraph(
        "Each GPU's figure is set against the median of the same figure on every GPU of its model in the fleet (a "
        "node's peer links: each link's fraction of its own link's rate against the median of the node model's "
        "links). Below: short of that median by more than the noise allows one run against the median of the "
        "group's, from the noise model (scripts/noise_model.json: the kind's band and one run's between-run and "
        "trial noise, at 95% one-sided; where check.json keeps no time, the wider of its protocol's two kinds); "
        "'detectable' is the shortfall found with 80% power at the group's size. A link is also below where its "
        "node's check judged it so. Drain: a GPU-bound figure or a link below, or a check that failed; host-paced "
        "figures (copies and calls timed on the host's clock) say the host's state and drain nothing."))
    return found


def record(nodes, skipped, groups, verdict):
    keep = ("name", "path", "source", "verdict", "check_verdict", "gpus", "below", "host", "failed", "errors")
    return {"schema": SCHEMA, "schema_version": VERSION, "verdict": verdict, "exit_status": fleet.EXIT_STATUS[verdict],
            "drain": [node["name"] for node in nodes if node["verdict"] == fleet.DRAIN], "skipped": skipped,
            "nodes": [{key: node[key] for key in keep} for node in nodes], "groups": groups}


def execute(args, argv):
    try:
        model = noise_model.load(args.noise_model)
        noise_model.require_scipy()
    except noise_model.NoiseModelError as error:
        print(f"gpubench fleet: could not judge: {error}", file=sys.stderr)
        return fleet.EXIT_STATUS[fleet.NOT_JUDGED]
    out_dir, _ = outputs.check_out_dir(args.out or session.default_out_dir(f"fleet-{session.default_run_id()}"))
    nodes, skipped = [], []
    once = {}
    for folder in args.nodes:  # a folder named twice is one node
        once.setdefault(os.path.realpath(folder), folder)
    folders = list(once.values())
    for folder, name in zip(folders, fleet.node_names(folders)):
        try:
            nodes.append(fleet.read_node(folder, name))
        except fleet.NodeError as error:
            print(f"gpubench fleet: skipped: {error}", file=sys.stderr)
            skipped.append(str(error))
    groups = fleet.judge(nodes, model)
    fleet.node_verdicts(nodes)
    verdict = fleet.fleet_verdict(nodes, skipped, groups)
    try:
        path = render.write_page(out_dir, "fleet", blocks(nodes, skipped, groups, verdict),
                                 record(nodes, skipped, groups, verdict), record_end="\n", allow_nan=False)
    except outputs.WriteError as error:
        print(f"gpubench fleet: error: {error}", file=sys.stderr)
        return fleet.EXIT_STATUS[fleet.NOT_JUDGED]
    drain = [f"drain {node['name']}: {'; '.join(node['below'])}" for node in nodes if node["verdict"] == fleet.DRAIN]
    print("\n".join([*drain, f"gpubench fleet: {verdict} (exit status {fleet.EXIT_STATUS[verdict]}); {path}"]))
    return fleet.EXIT_STATUS[verdict]
