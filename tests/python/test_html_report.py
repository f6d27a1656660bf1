"""summary.html: the blocks (document.py) in HTML and in Markdown, the page the report writes beside
summary.md from the same blocks, escaping of hostile strings from a results file, and the page as a
real (headless) browser renders it."""
import base64
import html
import json
import os
import re
import subprocess
import tempfile
import unittest

import support  # noqa: F401  (import path)
from support import fixture

from gpubench_driver.lib import charts, html_report, results
from gpubench_driver.lib.document import Figures, Heading, bullets, figure_of, paragraph, table, to_markdown
from gpubench_driver.lib.formatting import md
from gpubench_driver.commands import report

CHROMIUM = os.environ.get("GPUBENCH_CHROMIUM") or "/usr/bin/chromium"
BROWSER_TIMEOUT_S = 60
HOSTILE = "<script>alert(1)</script>"
HOSTILE_IMPL = "cu|blas<img src=x onerror=alert(2)>"
PLOT_NAMES = ("matmul_time.png", "matmul_rate.png", "matmul_speedup.png", "roofline.png")
FIRST_SCREEN = ("Headline", "Health", "Claims, measured here")
STUDY_HEADINGS = ("Crossover (GPU faster than the best CPU)", "Speedups at n = 200, 1024", "Best rates", "Size caps",
                  "Reference libraries", "Across the studies: roofline (GPU, resident)", "Per-entry telemetry",
                  "How far this machine varies from itself")
HEADINGS = FIRST_SCREEN + STUDY_HEADINGS
FIRST_SCREEN_RGB = (0xee, 0xf5, 0xfc)  # section.first-screen's background (html_report.STYLE)


def fixture_document():
    with open(fixture("results_v1.json"), encoding="utf-8") as stream:
        return json.load(stream)


def hostile_document():
    """The fixture with a script for a GPU name, markup and a '|' in an implementation (a table
    cell) and Markdown specials in a warning and a cap reason."""
    document = fixture_document()
    document["machine"]["gpus"][0]["name"] = HOSTILE
    document["warnings"].append("**not bold** `not code` \\ back_slash_ [x](javascript:alert(3)) </ul>")
    study = document["studies"]["matmul"]
    for entry in study["entries"]:
        if entry.get("impl") == "cublas":
            entry["impl"] = HOSTILE_IMPL
    for impl in study["implementations"]:
        if isinstance(impl, dict) and impl.get("max_size"):
            impl["cap_reason"] = "<iframe src=x></iframe> & | done"
    return document


def has_matplotlib():
    return charts.load_pyplot() is not None


def split_row(line):
    """A Markdown pipe-table row into its cells' Markdown: split on unescaped '|' outside code spans."""
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
            run = len(line[index:]) - len(line[index:].lstrip("`"))
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


class InlineTest(unittest.TestCase):
    def test_escaped_text_comes_back_as_the_literal_text(self):
        for text in ("plain", "transfer_pinned", "a*b**c", "x\\y", "`code`", "[link](http://x)", "a|b", "~~s~~",
                     HOSTILE, "<img src=x onerror=alert(1)>", "& &amp; \" '"):
            with self.subTest(text=text):
                self.assertEqual(html_report.inline(md(text)), html.escape(text, quote=True))

    def test_raw_html_in_the_markdown_is_text(self):
        self.assertEqual(html_report.inline("<b>x</b> & y"), "&lt;b&gt;x&lt;/b&gt; &amp; y")

    def test_code_bold_and_emphasis(self):
        self.assertEqual(html_report.inline("see `plots/a_b.png` and **bold** *em*"),
                         "see <code>plots/a_b.png</code> and <strong>bold</strong> <em>em</em>")

    def test_code_keeps_backslashes_and_escapes_markup(self):
        self.assertEqual(html_report.inline("`a\\_<b>`"), "<code>a\\_&lt;b&gt;</code>")

    def test_unclosed_markers_stay_text(self):
        self.assertEqual(html_report.inline("2 ** 3 and `x"), "2 ** 3 and `x")
        self.assertEqual(html_report.inline("\\*\\*not bold\\*\\*"), "**not bold**")


BLOCKS = [Heading(1, "Title"), paragraph("first line", "second line"), Heading(2, "Part"),
          bullets(["one", "two `x`"]), table(["a", "b"], [[md("x|y"), "**1**"], [md(HOSTILE)]]), paragraph("after")]


class BlockTest(unittest.TestCase):
    def test_headings_paragraphs_and_lists(self):
        self.assertEqual(html_report.to_html(BLOCKS[:4]),
                         "<h1>Title</h1>\n<p>first line second line</p>\n<h2>Part</h2>\n"
                         "<ul>\n<li>one</li>\n<li>two <code>x</code></li>\n</ul>")

    def test_table_with_an_escaped_pipe_and_a_short_row(self):
        self.assertEqual(html_report.to_html(BLOCKS[4:]),
                         "<table>\n<thead><tr><th>a</th><th>b</th></tr></thead>\n<tbody>\n"
                         "<tr><td>x|y</td><td><strong>1</strong></td></tr>\n"
                         "<tr><td>&lt;script&gt;alert(1)&lt;/script&gt;</td><td></td></tr>\n"
                         "</tbody>\n</table>\n<p>after</p>")

    def test_a_pipe_in_a_paragraph_is_text(self):
        self.assertEqual(html_report.to_html([paragraph("a | b", "c")]), "<p>a | b c</p>")

    def test_hostile_heading_stays_text(self):
        converted = html_report.to_html([Heading(1, f"run {md(HOSTILE)}"), bullets([md(HOSTILE)])])
        self.assertNotIn("<script", converted)
        self.assertEqual(converted.count("&lt;script&gt;alert(1)&lt;/script&gt;"), 2)

    def test_a_figure_shows_its_image(self):
        converted = html_report.to_html([Figures((figure_of("plots/a.png"), figure_of("plots/b.png"))),
                                         bullets(["`other`"])],
                                        {"plots/a.png": "data:image/png;base64,AAAA", "plots/b.png": None})
        self.assertIn('<img src="data:image/png;base64,AAAA" alt="plots/a.png">', converted)
        self.assertIn("the plot file could not be read", converted)
        self.assertIn("<li><code>other</code></li>", converted)

    def test_empty_lists_write_nothing(self):
        self.assertEqual(html_report.to_html([paragraph("a"), bullets([]), Figures(())]), "<p>a</p>")


class MarkdownTest(unittest.TestCase):
    """The same blocks as Markdown (summary.md)."""

    def test_blocks(self):
        self.assertEqual(to_markdown(BLOCKS + [Figures((figure_of("plots/a.png"),))]),
                         "# Title\n\nfirst line\nsecond line\n\n## Part\n\n- one\n- two `x`\n\n"
                         "| a | b |\n|---|---|\n| x\\|y | **1** |\n| \\<script\\>alert(1)\\</script\\> |\n\n"
                         "after\n\n- `plots/a.png`\n")

    def test_empty_lists_write_nothing(self):
        self.assertEqual(to_markdown([Heading(2, "Plots"), Figures(()), bullets([])]), "## Plots\n")

    def test_a_table_rule(self):
        self.assertEqual(to_markdown([table(["a", ""], [["1", ""]], rule=" --- ")]),
                         "| a |  |\n| --- | --- |\n| 1 |  |\n")

    def test_split_row(self):  # the helper the page test checks the summary's tables with
        self.assertEqual(split_row("| a | b\\|c | `d` |"), ["a", "b\\|c", "`d`"])
        self.assertEqual(split_row("| a | |"), ["a", ""])


class PageTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.out = self.directory.name

    def tearDown(self):
        self.directory.cleanup()

    def test_page_without_plots_is_complete(self):
        page = html_report.render([Heading(1, "gpubench run x"), Heading(2, "Plots"),
                                   paragraph("Plots were skipped: matplotlib is not installed.")], None, self.out)
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        self.assertIn("<title>gpubench run x</title>", page)
        self.assertIn("<style>", page)
        self.assertIn("Content-Security-Policy", page)
        self.assertNotIn("<img", page)

    def test_a_file_that_is_not_a_png_is_not_embedded(self):
        path = os.path.join(self.out, "fake.png")
        with open(path, "w", encoding="utf-8") as stream:
            stream.write("<script>alert(1)</script>")
        self.assertEqual(html_report.embedded_images([path, os.path.join(self.out, "absent.png")], self.out),
                         {"fake.png": None, "absent.png": None})

    def test_report_writes_the_page_beside_the_markdown(self):
        summary_path = report.regenerate(fixture("results_v1.json"), self.out)
        page_path = os.path.join(self.out, "summary.html")
        self.assertEqual(os.path.dirname(summary_path), os.path.dirname(page_path))
        with open(page_path, encoding="utf-8") as stream:
            page = stream.read()
        for heading in HEADINGS:
            self.assertIn(f"<h2>{html.escape(heading)}</h2>", page)
        with open(summary_path, encoding="utf-8") as stream:  # the same blocks: the same sections and tables
            markdown = stream.read()
        self.assertEqual([html.unescape(text) for text in re.findall(r"<h2>(.*?)</h2>", page)],
                         [re.sub(r"\\(.)", r"\1", line[3:]) for line in markdown.splitlines()
                          if line.startswith("## ")])
        self.assertEqual(page.count("<table>"), len(re.findall(r"(?m)^\|---", markdown)))
        self.assertIn("<tr><td>resident</td><td>each entry&#x27;s headline time</td><td>92</td><td>64 .. 96</td><td>cublas</td>", page)
        self.assertIn("<td>transfer_pinned</td>", page)  # the Markdown's escape undone
        if not has_matplotlib():
            self.assertIn("Plots were skipped", page)
            return
        for name in PLOT_NAMES:
            match = re.search(rf'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="plots/{name}">', page)
            self.assertIsNotNone(match, name)
            with open(os.path.join(self.out, "plots", name), "rb") as stream:
                self.assertEqual(match.group(1), base64.b64encode(stream.read()).decode("ascii"))
        self.assertNotIn('src="plots/', page)  # one file: nothing loaded beside it

    def test_hostile_strings_stay_text(self):
        path = os.path.join(self.out, "results.json")
        results.write(hostile_document(), path)
        report.regenerate(path)
        with open(os.path.join(self.out, "summary.html"), encoding="utf-8") as stream:
            page = stream.read()
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
        self.assertNotIn("<script", page.lower())
        self.assertNotIn("<iframe", page.lower())
        self.assertNotIn("<img src=x", page)
        self.assertNotIn('href="javascript', page)
        self.assertIn("<td>cu|blas&lt;img src=x onerror=alert(2)&gt;</td>", page)
        self.assertIn("**not bold** `not code` \\ back_slash_ [x](javascript:alert(3)) &lt;/ul&gt;", page)
        self.assertIn("&lt;iframe src=x&gt;&lt;/iframe&gt; &amp; | done", page)
        with open(os.path.join(self.out, "summary.md"), encoding="utf-8") as stream:
            markdown = stream.read()
        tables = re.findall(r"(?m)((?:^\|.*\n)+)", markdown)
        self.assertGreater(len(tables), 3)
        for found in tables:  # the '|' split no table row
            widths = {len(split_row(line)) for line in found.splitlines()}
            self.assertEqual(len(widths), 1, found)

    def test_damaged_and_foreign_files_are_refused_before_any_page(self):
        with open(fixture("results_v1.json"), encoding="utf-8") as stream:
            text = stream.read()
        foreign = dict(fixture_document(), schema="<script>alert(1)</script>")
        for name, content in (("truncated.json", text[: len(text) // 2]), ("foreign.json", json.dumps(foreign)),
                              ("not-a-dict.json", json.dumps(["<script>"]))):
            with self.subTest(file=name):
                path = os.path.join(self.out, name)
                with open(path, "w", encoding="utf-8") as stream:
                    stream.write(content)
                with self.assertRaises(results.ResultsError):
                    report.regenerate(path, os.path.join(self.out, "report"))
                self.assertFalse(os.path.exists(os.path.join(self.out, "report", "summary.html")))


def chromium(url, *args, workdir):
    """Headless Chromium on url, its own fresh profile, no background network; the completed process."""
    profile = tempfile.mkdtemp(dir=workdir, prefix="profile.")
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *args, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True)


@unittest.skipUnless(os.path.exists(CHROMIUM), f"no browser at {CHROMIUM}: install chromium (scripts/gpubench test "
                                               f"does on Debian) or set GPUBENCH_CHROMIUM")
class BrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.TemporaryDirectory()
        cls.out = cls.directory.name
        path = os.path.join(cls.out, "results.json")
        results.write(hostile_document(), path)
        report.regenerate(path)
        cls.url = "file://" + os.path.join(cls.out, "summary.html")
        cls.dom = chromium(cls.url, "--dump-dom", workdir=cls.out).stdout

    @classmethod
    def tearDownClass(cls):
        cls.directory.cleanup()

    def test_dom_has_the_sections_and_the_plots(self):
        headings = [html.unescape(text) for text in re.findall(r"<h2>(.*?)</h2>", self.dom)]
        self.assertEqual(headings, [*FIRST_SCREEN, "Warnings", *STUDY_HEADINGS])  # the hostile warning adds its own
        self.assertIn("<table>", self.dom)
        images = re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="plots/([^"]+)">', self.dom)
        self.assertEqual(images, list(PLOT_NAMES) if has_matplotlib() else [])

    def test_hostile_string_made_no_element(self):
        self.assertNotIn("<script", self.dom.lower())
        self.assertNotIn("<iframe", self.dom.lower())
        self.assertNotIn("onerror", re.sub(r"&lt;img src=x onerror=alert\(2\)&gt;", "", self.dom))
        self.assertIn("GPU &lt;script&gt;alert(1)&lt;/script&gt;", self.dom)

    @unittest.skipUnless(has_matplotlib(), "reading the screenshot's pixels takes matplotlib")
    def test_the_first_screen_shows_the_headline(self):
        """A laptop-sized window: the first screen's panel, and so the headline, fills a good part of it."""
        from matplotlib import image
        shot = os.path.join(self.out, "first-screen.png")
        chromium(self.url, f"--screenshot={shot}", "--window-size=1280,800", workdir=self.out)
        pixels = image.imread(shot)[:, :, :3]
        target = [channel / 255 for channel in FIRST_SCREEN_RGB]
        matches = (abs(pixels - target) < 2 / 255).all(axis=2).mean()
        self.assertGreater(matches, 0.05)
        top_rows = (abs(pixels[:400] - target) < 2 / 255).all(axis=2).any(axis=1).mean()
        self.assertGreater(top_rows, 0.2)  # the panel starts within the top half of the window

    def test_screenshot(self):
        shot = os.path.join(self.out, "page.png")
        chromium(self.url, f"--screenshot={shot}", "--window-size=1200,2400", workdir=self.out)
        with open(shot, "rb") as stream:
            data = stream.read()
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(data), 20000)  # a blank page of this size is a few kB


if __name__ == "__main__":
    unittest.main()
