"""summary.html: summary.md as one self-contained HTML page, the plots embedded as base64 PNGs.

The page is made from summary.render's Markdown by a small converter for the subset that
Markdown uses: ATX headings, paragraphs, bullet and numbered lists (one line per item), pipe
tables, inline code, **bold** and *emphasis*, and backslash escapes. No raw HTML passes through:
every piece of text, escaped characters included, is HTML-escaped, so a string from a results
file (a GPU name like '<script>...') shows as text. The page's Content-Security-Policy allows no
script at all, as a second line of defence.
"""
import base64
import html
import os
import re
import string

HTML_NAME = "summary.html"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PUNCTUATION = frozenset(string.punctuation)  # what a backslash escapes (CommonMark: ASCII punctuation)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^[-*+][ \t]+(.*)$")
_ORDERED = re.compile(r"^\d{1,9}[.)][ \t]+(.*)$")
_DELIMITER_CELL = re.compile(r"^\s*(:?)-+(:?)\s*$")

STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24;
       background: #fff; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5em 2em 3em; }
h1 { font-size: 1.7em; border-bottom: 2px solid #d0d7de; padding-bottom: .3em; }
h2 { font-size: 1.3em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; margin-top: 1.8em; }
h3, h4, h5, h6 { font-size: 1.1em; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f4f6;
       padding: .1em .3em; border-radius: 4px; }
table { border-collapse: collapse; margin: .8em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: .3em .7em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(even) td { background: #fafbfc; }
figure { margin: .6em 0 1.4em; }
figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { font-size: .9em; color: #57606a; }
.missing { color: #9a3412; }
"""

# No script, no outside request: only the inline stylesheet and data: images.
CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def escape(text):
    return html.escape(text, quote=True)


# --- inline Markdown ------------------------------------------------------------------------
def _closing(text, start, marker):
    """Index of the next unescaped marker at or after start, outside code spans; -1 if none."""
    index = start
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text) and text[index + 1] in _PUNCTUATION:
            index += 2
        elif text[index] == "`":
            run = _run_length(text, index, "`")
            end = text.find("`" * run, index + run)
            index = index + run if end < 0 else end + run
        elif text.startswith(marker, index) and not (marker == "*" and text.startswith("**", index)):
            return index
        else:
            index += 1
    return -1


def _run_length(text, index, char):
    end = index
    while end < len(text) and text[end] == char:
        end += 1
    return end - index


def inline(text):
    """Inline Markdown to HTML: backslash escapes become the literal (escaped) character, code
    spans keep their text as is, **bold** and *emphasis* become tags; everything else is text."""
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _PUNCTUATION:
            out.append(escape(text[index + 1]))
            index += 2
        elif char == "`":
            run = _run_length(text, index, "`")
            end = text.find("`" * run, index + run)
            while end >= 0 and _run_length(text, end, "`") != run:  # a longer run does not close it
                end = text.find("`" * run, end + _run_length(text, end, "`"))
            if end < 0:
                out.append(escape("`" * run))
                index += run
                continue
            code = text[index + run:end]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]
            out.append(f"<code>{escape(code)}</code>")
            index = end + run
        elif text.startswith("**", index) and (end := _closing(text, index + 2, "**")) > index + 2:
            out.append(f"<strong>{inline(text[index + 2:end])}</strong>")
            index = end + 2
        elif (char == "*" and not text.startswith("**", index)
              and (end := _closing(text, index + 1, "*")) > index + 1):
            out.append(f"<em>{inline(text[index + 1:end])}</em>")
            index = end + 1
        else:
            out.append(escape(char))
            index += 1
    return "".join(out)


# --- blocks ---------------------------------------------------------------------------------
def split_row(line):
    """A pipe-table row into its cells' Markdown: split on unescaped '|' outside code spans."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    cells, current, index = [], [], 0
    while index < len(line):
        char = line[index]
        if char == "\\" and index + 1 < len(line):
            current.append(line[index:index + 2])
            index += 2
        elif char == "`":
            run = _run_length(line, index, "`")
            end = line.find("`" * run, index + run)
            stop = index + run if end < 0 else end + run
            current.append(line[index:stop])
            index = stop
        elif char == "|":
            cells.append("".join(current).strip())
            current = []
            index += 1
        else:
            current.append(char)
            index += 1
    rest = "".join(current).strip()
    if rest or not line.rstrip().endswith("|"):
        cells.append(rest)
    return cells


def _alignments(line):
    """The alignments of a delimiter row ('|---|:--:|'), or None when the line is not one."""
    if "|" not in line and "-" not in line:
        return None
    cells = split_row(line)
    found = []
    for cell in cells:
        match = _DELIMITER_CELL.match(cell)
        if not match:
            return None
        left, right = match.groups()
        found.append("center" if left and right else "right" if right else "left" if left else None)
    return found or None


def _is_table_start(lines, index):
    return ("|" in lines[index] and index + 1 < len(lines) and "|" in lines[index + 1]
            and _alignments(lines[index + 1]) is not None)


def _cell(tag, markdown, alignment):
    style = f' style="text-align: {alignment}"' if alignment else ""
    return f"<{tag}{style}>{inline(markdown)}</{tag}>"


def _table(header, alignments, rows):
    width = len(header)
    alignments = (alignments + [None] * width)[:width]

    def fit(cells):
        return (cells + [""] * width)[:width]

    head = "".join(_cell("th", cell, align) for cell, align in zip(header, alignments))
    body = "".join("<tr>" + "".join(_cell("td", cell, align) for cell, align in zip(fit(row), alignments))
                   + "</tr>\n" for row in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def _list_item(markdown, images):
    """A list item; one that is only a code span naming an embedded image gets the image too."""
    match = re.fullmatch(r"`([^`]+)`", markdown.strip())
    if match and images is not None and match.group(1) in images:
        source = images[match.group(1)]
        caption = f"<figcaption><code>{escape(match.group(1))}</code></figcaption>"
        if source is None:
            return f'<li><figure>{caption}<p class="missing">(the plot file could not be read)</p></figure></li>'
        return (f'<li><figure>{caption}<img src="{escape(source)}" alt="{escape(match.group(1))}">'
                f"</figure></li>")
    return f"<li>{inline(markdown)}</li>"


def to_html(markdown, images=None):
    """Markdown (the subset summary.render writes) to an HTML fragment. images maps a code span's
    text (a plot's path relative to the page) to a data: URI, or None for a file that could not be read:
    a list item holding only that code span shows the image."""
    lines = markdown.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            index += 1
        elif _is_table_start(lines, index):
            header, alignments = split_row(line), _alignments(lines[index + 1])
            index += 2
            rows = []
            while index < len(lines) and lines[index].strip() and "|" in lines[index]:
                rows.append(split_row(lines[index]))
                index += 1
            blocks.append(_table(header, alignments, rows))
        elif _BULLET.match(line) or _ORDERED.match(line):
            pattern, tag = (_BULLET, "ul") if _BULLET.match(line) else (_ORDERED, "ol")
            items = []
            while index < len(lines) and pattern.match(lines[index]):
                items.append(_list_item(pattern.match(lines[index]).group(1), images))
                index += 1
            blocks.append(f"<{tag}>\n" + "\n".join(items) + f"\n</{tag}>")
        else:
            paragraph = []
            while (index < len(lines) and lines[index].strip() and not _HEADING.match(lines[index])
                   and not _BULLET.match(lines[index]) and not _ORDERED.match(lines[index])
                   and not _is_table_start(lines, index)):
                paragraph.append(lines[index].strip())
                index += 1
            blocks.append(f"<p>{inline(' '.join(paragraph))}</p>")
    return "\n".join(blocks)


# --- the page -------------------------------------------------------------------------------
def _title(markdown):
    for line in markdown.splitlines():
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 1:
            return re.sub(r"<[^>]*>", "", inline(heading.group(2)))  # already escaped text, tags dropped
    return "gpubench report"


def embedded_images(plot_paths, out_dir):
    """{path relative to out_dir: data: URI of the PNG, or None if it cannot be read as one}."""
    images = {}
    for path in plot_paths or []:
        try:
            with open(path, "rb") as stream:
                data = stream.read()
        except OSError:
            data = b""
        images[os.path.relpath(path, out_dir)] = (
            "data:image/png;base64," + base64.b64encode(data).decode("ascii") if data.startswith(PNG_SIGNATURE)
            else None)
    return images


def render(markdown, plot_paths, out_dir):
    """The whole page: the Markdown converted, each plot listed in it embedded."""
    body = to_html(markdown, embedded_images(plot_paths, out_dir))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_title(markdown)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
            f"</body>\n</html>\n")


def write(markdown, plot_paths, out_dir, name=HTML_NAME):
    """The page as `name` (summary.html) in out_dir; returns its path."""
    path = os.path.join(out_dir, name)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(render(markdown, plot_paths, out_dir))
    return path
