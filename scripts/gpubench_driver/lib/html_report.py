"""summary.html: the report's blocks (document.py) as one self-contained page, the plots embedded. Only the
inline Markdown inside a block is converted (code spans, **bold**, *emphasis*, backslash escapes); all text is
HTML-escaped, so no raw HTML from a results file passes, and the page's Content-Security-Policy allows no script."""
import base64
import html
import os
import re
import string

from gpubench_driver.lib import document, outputs

escape = html.escape  # quotes too: text goes into attributes

HTML_NAME = "summary.html"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PUNCTUATION = frozenset(string.punctuation)  # what a backslash escapes (CommonMark: ASCII punctuation)
_BACKTICKS = re.compile("`+")

# The page's stylesheet, inlined into it.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "summary.css"), encoding="utf-8") as _stream:
    STYLE = _stream.read()

# No script, no outside request: only the inline stylesheet and data: images.
CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# --- inline Markdown ------------------------------------------------------------------------
def _closing(text, start, marker):
    """Index of the next unescaped marker at or after start, outside code spans; -1 if none."""
    index = start
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text) and text[index + 1] in _PUNCTUATION:
            index += 2
        elif text[index] == "`":
            run = len(_BACKTICKS.match(text, index)[0])
            end = text.find("`" * run, index + run)
            index = index + run if end < 0 else end + run
        elif text.startswith(marker, index) and not (marker == "*" and text.startswith("**", index)):
            return index
        else:
            index += 1
    return -1


def inline(text):
    """Inline Markdown to HTML; everything but escapes, code spans, **bold** and *emphasis* is text."""
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _PUNCTUATION:
            out.append(escape(text[index + 1]))
            index += 2
        elif char == "`":
            run = len(_BACKTICKS.match(text, index)[0])
            closing = re.compile(f"(?<!`){'`' * run}(?!`)").search(text, index + run)  # exactly as long
            if closing is None:
                out.append(escape("`" * run))
                index += run
                continue
            code = text[index + run:closing.start()]
            if code.startswith(" ") and code.endswith(" ") and code.strip():
                code = code[1:-1]
            out.append(f"<code>{escape(code)}</code>")
            index = closing.end()
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
def _table(block):
    width = len(block.header)  # a short row is filled with empty cells, a long one cut
    head = "".join(f"<th>{inline(cell)}</th>" for cell in block.header)
    body = "".join("<tr>" + "".join(f"<td>{inline(cell)}</td>" for cell in (list(row) + [""] * width)[:width])
                   + "</tr>\n" for row in block.rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def _figure(found, images):
    """A list item with the image embedded, or a note where its file could not be read as a PNG."""
    caption = f"<figcaption>{inline(found.caption)}</figcaption>"
    source = (images or {}).get(found.path)
    if source is None:
        return f'<li><figure>{caption}<p class="missing">(the plot file could not be read)</p></figure></li>'
    return f'<li><figure>{caption}<img src="{escape(source)}" alt="{escape(found.path)}"></figure></li>'


def _block(block, images):
    if isinstance(block, document.Heading):
        return f"<h{block.level}>{inline(block.text)}</h{block.level}>"
    if isinstance(block, document.Paragraph):
        return f"<p>{inline(' '.join(line.strip() for line in block.lines))}</p>"
    if isinstance(block, document.BulletList):
        return "<ul>\n" + "\n".join(f"<li>{inline(item)}</li>" for item in block.items) + "\n</ul>"
    if isinstance(block, document.Table):
        return _table(block)
    if isinstance(block, document.Figures):
        return '<ul class="figures">\n' + "\n".join(_figure(found, images) for found in block.figures) + "\n</ul>"
    if isinstance(block, document.Folded):
        return f"<details><summary>{escape(block.summary)}</summary>\n{to_html(block.blocks, images)}\n</details>"
    if isinstance(block, document.Beside):
        return (f'<div class="beside"><div class="main">\n{to_html(block.blocks, images)}\n</div>'
                f'<div class="side">\n{_block(block.figures, images)}\n</div></div>')
    if isinstance(block, document.Panel):
        return f'<section class="{escape(block.kind)}">\n{to_html(block.blocks, images)}\n</section>'
    raise TypeError(f"not a block: {block!r}")


def to_html(blocks, images=None):
    """The blocks as an HTML fragment; images: {a figure's path: its data: URI, or None (unreadable)}."""
    return "\n".join(_block(block, images) for block in blocks if not document.is_empty(block))


# --- the page -------------------------------------------------------------------------------
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


def render(blocks, plot_paths, out_dir):
    """The whole page: the blocks in HTML, each figure's plot embedded."""
    body = to_html(blocks, embedded_images(plot_paths, out_dir))
    title = next((re.sub(r"<[^>]*>", "", inline(block.text)) for block in blocks  # escaped text, tags dropped
                  if isinstance(block, document.Heading) and block.level == 1), "gpubench report")
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{escape(CONTENT_SECURITY_POLICY)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
            f"</body>\n</html>\n")


def write(blocks, plot_paths, out_dir, name=HTML_NAME):
    """The page of the blocks as `name` (summary.html) in out_dir; returns its path."""
    page = render(blocks, plot_paths, out_dir)
    return outputs.write_text(os.path.join(out_dir, name), page)
