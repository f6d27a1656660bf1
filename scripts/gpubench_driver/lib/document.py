"""The report as a list of blocks, written out as Markdown (summary.md) or HTML (summary.html, built from the
blocks, not by parsing the Markdown back). A block's text is inline Markdown: text from files escaped with
formatting.md, our own markup only code spans, **bold**, *emphasis* and backslash escapes."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    level: int  # 1: the page's title, 2: a section
    text: str


@dataclass(frozen=True)
class Paragraph:
    lines: tuple  # one paragraph: Markdown keeps its line breaks, HTML joins the lines with a space


@dataclass(frozen=True)
class BulletList:
    items: tuple


@dataclass(frozen=True)
class Table:
    header: tuple
    rows: tuple       # each a tuple of cells; a row shorter than the header is left short in Markdown
    rule: str = "---"  # each delimiter cell: '|---|---|' ('|' + rule + '|' per column)


@dataclass(frozen=True)
class Figure:
    path: str     # the image file, relative to the page (the HTML page embeds it)
    caption: str


@dataclass(frozen=True)
class Figures:
    """A list of images: in Markdown a bullet list of their captions, in HTML the images themselves."""
    figures: tuple


@dataclass(frozen=True)
class Folded:
    """Blocks a reader opens on demand (HTML <details>): a long table, the detail of a finding."""
    summary: str  # plain text: the line shown while folded
    blocks: tuple


@dataclass(frozen=True)
class Beside:
    """Blocks with figures beside them (HTML: side by side where the page is wide enough)."""
    blocks: tuple
    figures: Figures


@dataclass(frozen=True)
class Panel:
    """Blocks set apart as one part of the page (HTML <section class=kind>): the first screen."""
    kind: str
    blocks: tuple


# --- building blocks --------------------------------------------------------------------------
def paragraph(*lines):
    return Paragraph(tuple(lines))


def bullets(items):
    return BulletList(tuple(items))


def table(header, rows, rule="---"):
    return Table(tuple(header), tuple(tuple(row) for row in rows), rule)


def section(title, blocks, level=2):
    """A heading and its blocks: a list of blocks, to be added to the page's list."""
    return [Heading(level, title), *blocks]


def figure_of(path):
    """A plot listed by its path, in a code span."""
    return Figure(path, f"`{path}`")


# --- Markdown ---------------------------------------------------------------------------------
def _row(cells):
    return "| " + " | ".join(cells) + " |"


def block_markdown(block):
    if isinstance(block, Heading):
        return "#" * block.level + " " + block.text
    if isinstance(block, Paragraph):
        return "\n".join(block.lines)
    if isinstance(block, BulletList):
        return "\n".join(f"- {item}" for item in block.items)
    if isinstance(block, Table):
        return "\n".join([_row(block.header), "|" + f"{block.rule}|" * len(block.header),
                          *(_row(row) for row in block.rows)])
    if isinstance(block, Figures):
        return "\n".join(f"- {found.caption}" for found in block.figures)
    if isinstance(block, Folded):  # GitHub renders <details> in Markdown; the blank lines keep the table a table
        return "\n\n".join([f"<details><summary>{block.summary}</summary>", to_markdown(block.blocks).rstrip("\n"),
                             "</details>"])
    if isinstance(block, (Beside, Panel)):
        inner = block.blocks + ((block.figures,) if isinstance(block, Beside) else ())
        return to_markdown(inner).rstrip("\n")
    raise TypeError(f"not a block: {block!r}")


def to_markdown(blocks):
    """The blocks as Markdown, a blank line between two blocks, a newline after the last."""
    return "\n\n".join(block_markdown(block) for block in blocks if not is_empty(block)) + "\n"


def is_empty(block):
    """A list or figure list without items, or a fold or panel with nothing in it, writes nothing."""
    if isinstance(block, (Folded, Panel)):
        return all(is_empty(inner) for inner in block.blocks)
    return isinstance(block, (BulletList, Figures)) and not (block.items if isinstance(block, BulletList)
                                                             else block.figures)


FOLD_ROWS = 12  # a table longer than this is folded: the page stays a page a reader scans


def folded_long_tables(blocks):
    """The blocks with each table of more than FOLD_ROWS rows folded, its row count in the fold's line."""
    return [Folded(f"the table ({len(block.rows)} rows)", (block,)) if isinstance(block, Table)
            and len(block.rows) > FOLD_ROWS else block for block in blocks]
