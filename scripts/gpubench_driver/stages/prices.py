"""What compare and rank set beside cost: the price table (scripts/prices.json, dated examples), each run's
price per hour from --price (an instance of the table at the run's share of its GPUs, or USD per hour), and
what a study's figures cost at it (per 1000 GEMMs and TFLOP/s per USD-hour, or per training epoch)."""
import json
import math
import os

from gpubench_driver import studies
from gpubench_driver.lib import outputs
from gpubench_driver.lib.formatting import md
from gpubench_driver.stages import options as opts

DEFAULT_PRICES = os.path.join(outputs.SCRIPTS_DIR, "prices.json")
PRICES_SCHEMA = "gpubench-prices"
SECONDS_PER_HOUR = 3600.0


class PriceTableError(Exception):
    """A price table that cannot be read or breaks its schema."""


def _positive_price(value, where, error):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise error(f"{where}: expected a positive number of USD per hour, got {value!r}")
    return float(value)


# A run measures one GPU (the studies run on device 0): it is priced at one GPU's share of an instance.
GPUS_PER_RUN = 1


def add_price_arguments(parser, priced_as=""):
    """--price and --prices; priced_as: how an instance type's price is shared out, where it is."""
    parser.add_argument("--price", action="append", default=[], metavar="FILE=PRICE",
                        help=f"FILE's price: an instance type of the price table{priced_as}, or USD per hour "
                             "(repeatable)")
    parser.add_argument("--prices", default=DEFAULT_PRICES, metavar="TABLE",
                        help="price table (default: scripts/prices.json, dated examples: check current prices)")


def instance_gpu_price(record):
    """USD per GPU-hour of a price table instance: quoted so, or its instance-hour price over its GPUs."""
    return record["usd_per_gpu_hour"] if "usd_per_gpu_hour" in record else record["usd_per_hour"] / record["gpus"]


def _check_instance(instance, record, path):
    where = f"{path}: instances.{instance}"
    if not isinstance(record, dict):
        raise PriceTableError(f"{where}: expected an object with usd_per_hour or usd_per_gpu_hour")
    quoted = [key for key in ("usd_per_hour", "usd_per_gpu_hour") if key in record]
    if len(quoted) != 1:
        raise PriceTableError(f"{where}: give exactly one of usd_per_hour and usd_per_gpu_hour")
    _positive_price(record[quoted[0]], f"{where}.{quoted[0]}", PriceTableError)
    gpus = record.get("gpus")
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PriceTableError(f"{where}.gpus: expected a positive whole number of GPUs, got {gpus!r}")
    for key in ("gpu_model", "source", "retrieved"):  # a price is only as good as its date and source
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise PriceTableError(f"{where}.{key}: expected text")


def load_price_table(path):
    """The price table: {instance: {"usd_per_hour" or "usd_per_gpu_hour", "gpus", "gpu_model", "source",
    ...}}."""
    try:
        with open(path, encoding="utf-8") as stream:
            table = json.load(stream, parse_constant=_reject_constant)
    except OSError as error:
        raise PriceTableError(f"cannot read the price table {path}: {error}") from None
    except ValueError as error:
        raise PriceTableError(f"the price table {path} is not valid JSON: {error}") from None
    except RecursionError:
        raise PriceTableError(f"the price table {path} nests its JSON too deeply") from None
    if not isinstance(table, dict) or table.get("schema") != PRICES_SCHEMA:
        raise PriceTableError(f"{path} is not a price table (expected \"schema\": \"{PRICES_SCHEMA}\")")
    if not isinstance(table.get("instances"), dict):
        raise PriceTableError(f"{path}: instances: expected an object of instance types")
    for instance, record in table["instances"].items():
        _check_instance(instance, record, path)
    return table


def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _price_of(value, table_path, tables):
    """(USD per hour, instance, its record) of --price's value: a number, or an instance at the run's GPU
    share."""
    try:
        number = float(value)
    except ValueError:
        if table_path not in tables:
            tables[table_path] = load_price_table(table_path)
        instances = tables[table_path]["instances"]
        if value not in instances:
            raise opts.UsageError(f"--price: unknown instance type '{value}' (the price table {table_path} has: "
                                  f"{', '.join(sorted(instances)) or 'none'}; or give USD per hour)") from None
        record = instances[value]
        return instance_gpu_price(record) * min(GPUS_PER_RUN, record["gpus"]), value, record
    return _positive_price(number, f"--price {value}", opts.UsageError), None, None


def apply_prices(sources, specs, table_path):
    """--price FILE=INSTANCE or FILE=USD_PER_HOUR, FILE as given on the command line."""
    by_path = {os.path.abspath(source.path): source for source in sources}
    tables = {}
    for spec in specs:
        path, separator, value = spec.rpartition("=")
        if not separator or not path or not value:
            raise opts.UsageError(f"--price: expected FILE=INSTANCE or FILE=USD_PER_HOUR, got '{spec}'")
        source = by_path.get(os.path.abspath(path))
        if source is None:
            raise opts.UsageError(f"--price: '{path}' is not one of the files compared")
        source.usd_per_hour, source.instance, source.instance_record = _price_of(value, table_path, tables)
    return tables.get(table_path)


def usd_per_1000_products(entry, usd_per_hour):
    return entry["time_s"]["median"] * 1000 / SECONDS_PER_HOUR * usd_per_hour


def tflops_per_usd_hour(entry, usd_per_hour):
    rate = entry.get("flop_per_s")
    return None if rate is None else rate / 1e12 / usd_per_hour


def usd_per_epoch(entry, epoch_samples, usd_per_hour):
    per_call = entry.get("samples") or entry.get("batch")
    if not epoch_samples or not per_call:
        return None
    samples_per_s = per_call / entry["time_s"]["median"]
    return epoch_samples / samples_per_s / SECONDS_PER_HOUR * usd_per_hour


def cost_kind(study_name):
    """"gemm" (USD per 1000 products, TFLOP/s per USD-hour), "epoch" (USD per epoch) or None."""
    record = studies.BY_NAME.get(study_name)
    if record is None:
        return None
    if record.one_gemm_per_call:
        return "gemm"
    return "epoch" if record.batch and record.batch.epoch_samples else None


def usd(value):
    return "n/a" if value is None else f"{value:.3g} USD"


def price_cell(source):
    if source.usd_per_hour is None:
        return "none"
    shared = "" if source.instance_record is None else f" ({md(source.instance)}: {_share(source.instance_record)})"
    return f"{source.usd_per_hour:.4g} USD/h{shared}"


def _share(record):
    """How an instance's price became a run's: its GPUs, and the run's share of them."""
    quoted = (f"{record['usd_per_gpu_hour']:g} USD per GPU-hour" if "usd_per_gpu_hour" in record
              else f"{record['usd_per_hour']:g} USD/h for {record['gpus']} {md(record['gpu_model'])}")
    if record["gpus"] > GPUS_PER_RUN:
        return f"{quoted}; the run used {GPUS_PER_RUN} of its {record['gpus']} GPUs"
    return quoted


def prices_note(sources, table):
    lines = []
    if table is not None:
        lines.append(f"Prices from the price table: {md(table.get('note'))}")
        for source in sources:
            if source.instance_record:
                lines.append(f"{md(source.instance)}: {md(source.instance_record['source'])}, retrieved "
                             f"{md(source.instance_record['retrieved'])}; a run on one GPU is priced at one GPU's "
                             f"share of the instance.")
    priced = [number for number, source in enumerate(sources, start=1) if source.usd_per_hour]
    if priced and len(priced) < len(sources):
        lines.append("Cost columns need a price for every file (--price FILE=INSTANCE or FILE=USD_PER_HOUR); "
                     f"only {', '.join(f'#{n}' for n in priced)} had one.")
    return lines
