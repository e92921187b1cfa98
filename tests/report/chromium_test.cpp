// The HTML report as a browser sees it: `trainscope report` writes the page,
// headless Chromium renders it to a PNG and dumps the DOM it built, and the
// test checks the picture is not empty and the charts' SVG elements are in
// the DOM. Skipped (with the reason) when chromium or gnuplot is missing.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "report/gnuplot.h"
#include "tests/run_command.h"
#include "tests/suite_builder.h"

namespace trainscope::report {
namespace {

namespace fs = std::filesystem;
using testing::run_shell;
using testing::run_trainscope;
using testing::shell_quote;

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    auto r = run_shell(std::string("command -v ") + name);
    if (r.exit_code == 0 && !r.output.empty()) return r.output.substr(0, r.output.find('\n'));
  }
  return "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReportChromiumTest, ChartsAreDrawnInTheBrowser) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  }
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed (scripts/install-deps.sh)";
  const fs::path dir =
      fs::temp_directory_path() / ("trainscope-chromium-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto spec = testing::reductions_suite();
  spec.repetitions = 2;
  spec.cases[1].name = "<script>document.title='pwned'</script>";
  testing::build_suite_db(dir / "r.db", spec);

  auto report = run_trainscope("report --db " + shell_quote((dir / "r.db").string()) + " --out " +
                               shell_quote((dir / "report.html").string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("11 chart(s)"), std::string::npos) << report.output;

  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --hide-scrollbars --window-size=1400,2400 --user-data-dir=";
  const std::string url = "file://" + (dir / "report.html").string();
  auto shot = run_shell("timeout 120 " + shell_quote(chromium) + flags +
                        shell_quote((dir / "profile-shot").string()) + " --screenshot=" +
                        shell_quote((dir / "shot.png").string()) + " " + shell_quote(url));
  const std::string png = read(dir / "shot.png");
  ASSERT_GT(png.size(), 10000u) << shot.output;  // a blank page compresses to a few KB
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));

  auto dom = run_shell("timeout 120 " + shell_quote(chromium) + flags +
                       shell_quote((dir / "profile-dom").string()) + " --dump-dom " +
                       shell_quote(url) + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.output.substr(0, 2000);
  // The DOM the browser built holds every chart as SVG with drawn paths.
  EXPECT_EQ(count(dom.output, "<svg"), 11u);  // the prediction chart included
  EXPECT_GT(count(dom.output, "<path"), 20u);
  EXPECT_NE(dom.output.find("id=\"chart-1-phases\""), std::string::npos);
  // The case name stayed text: no script element, title untouched.
  EXPECT_EQ(dom.output.find("<script"), std::string::npos);
  EXPECT_NE(dom.output.find("<title>trainscope report</title>"), std::string::npos);
  EXPECT_NE(dom.output.find("&lt;script&gt;document.title"), std::string::npos);
  fs::remove_all(dir);
}

// The prediction chart read at a glance: no two of its labels (ticks, axis
// labels, panel titles, legend entries) overlap as Chromium lays them out,
// no label lies on a legend sample, and the legend is outside the plots (it
// sat inside, over the curves; the y label ran over its samples).
TEST(ReportChromiumTest, ThePredictionChartsLabelsDoNotOverlap) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  }
  if (!find_gnuplot()) GTEST_SKIP() << "gnuplot not installed (scripts/install-deps.sh)";
  const fs::path dir =
      fs::temp_directory_path() / ("trainscope-chromium-labels-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::build_suite_db(dir / "r.db", testing::reductions_suite());
  auto report = run_trainscope("report --db " + shell_quote((dir / "r.db").string()) + " --out " +
                               shell_quote((dir / "report.html").string()));
  ASSERT_EQ(report.exit_code, 0) << report.output;
  // The page with a script that measures the chart's text boxes and writes
  // the overlapping pairs into the DOM Chromium dumps.
  std::string page = read(dir / "report.html");
  const std::string measure = R"(<script>
const boxes = [...document.querySelectorAll('[id$="-prediction"] svg text')]
  .filter(t => t.textContent.trim() !== '')
  .map(t => ({text: t.textContent.trim(), r: t.getBoundingClientRect()}));
const overlaps = [];
for (let i = 0; i < boxes.length; ++i) {
  for (let j = i + 1; j < boxes.length; ++j) {
    const a = boxes[i].r, b = boxes[j].r;
    const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (x > 1 && y > 1) overlaps.push(boxes[i].text + ' / ' + boxes[j].text);
  }
}
// The plots' frames: gnuplot draws each border as one closed rectangle.
const frame = /^M([\d.]+),([\d.]+) L\1,([\d.]+) L([\d.]+),\3 L\4,\2 L\1,\2 Z/;
const frames = [...document.querySelectorAll('[id$="-prediction"] svg path')]
  .filter(p => frame.test((p.getAttribute('d') || '').trim()))
  .map(p => p.getBoundingClientRect());
const legend = /^ideal$|, overlap$|, after backward$|^measured/;
const inside = boxes.filter(b => legend.test(b.text) && frames.some(f =>
  b.r.left < f.right && b.r.right > f.left && b.r.top < f.bottom && b.r.bottom > f.top))
  .map(b => b.text);
// A legend's sample (gnuplot draws it as the first segment of its curve's
// path, "M x,y L x2,y", or as a point) and the text around it: no label may
// lie on one outside the plots (the old chart's y label ran over them).
const marks = [];
for (const p of document.querySelectorAll('[id$="-prediction"] svg path, [id$="-prediction"] svg use')) {
  let r;
  if (p.tagName === 'use') {
    r = p.getBoundingClientRect();
  } else {
    const m = /^M([\d.]+),([\d.]+) L([\d.]+),\2(?![\d.])/.exec((p.getAttribute('d') || '').trim());
    if (!m) continue;
    const svg = p.ownerSVGElement, ctm = p.getScreenCTM();
    const a = svg.createSVGPoint(), b = svg.createSVGPoint();
    a.x = +m[1]; a.y = +m[2] - 2; b.x = +m[3]; b.y = +m[2] + 2;
    const pa = a.matrixTransform(ctm), pb = b.matrixTransform(ctm);
    r = {left: Math.min(pa.x, pb.x), right: Math.max(pa.x, pb.x),
         top: Math.min(pa.y, pb.y), bottom: Math.max(pa.y, pb.y)};
  }
  if (r.right - r.left + r.bottom - r.top <= 0) continue;
  if (frames.some(f => r.left < f.right + 1 && r.right > f.left - 1 &&
                       r.top < f.bottom + 1 && r.bottom > f.top - 1)) continue;
  marks.push(r);
}
const onMarks = boxes.filter(b => marks.some(m =>
  Math.min(b.r.right, m.right) - Math.max(b.r.left, m.left) > 1 &&
  Math.min(b.r.bottom, m.bottom) - Math.max(b.r.top, m.top) > 1)).map(b => b.text);
document.body.insertAdjacentHTML('beforeend', '<pre id="labels">labels ' + boxes.length +
  ' overlapping ' + overlaps.length + ': ' + overlaps.join('; ') + ' | frames ' +
  frames.length + ' legend inside ' + inside.length + ': ' + inside.join('; ') + ' | marks ' +
  marks.length + ' text on a mark ' + onMarks.length + ': ' + onMarks.join('; ') + '</pre>');
</script>)";
  page.insert(page.rfind("</body>"), measure);
  std::ofstream(dir / "measured.html") << page;
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --hide-scrollbars --window-size=1400,2400 --user-data-dir=";
  auto dom = run_shell("timeout 120 " + shell_quote(chromium) + flags +
                       shell_quote((dir / "profile").string()) + " --dump-dom " +
                       shell_quote("file://" + (dir / "measured.html").string()) + " 2>/dev/null");
  ASSERT_EQ(dom.exit_code, 0) << dom.output.substr(0, 2000);
  // The last: the script's own text holds the first.
  const auto at = dom.output.rfind("<pre id=\"labels\">labels ");
  ASSERT_NE(at, std::string::npos) << "the script did not run";
  const std::string said = dom.output.substr(at, dom.output.find("</pre>", at) - at);
  EXPECT_GT(std::stoi(said.substr(said.find("labels ") + 7)), 20) << said;
  EXPECT_NE(said.find(" overlapping 0: "), std::string::npos) << said;
  // Every panel's frame found, and no legend entry inside one.
  EXPECT_EQ(said.find(" frames 0 "), std::string::npos) << said;
  EXPECT_NE(said.find(" legend inside 0: "), std::string::npos) << said;
  // The legend's samples found, and no text on one.
  EXPECT_EQ(said.find(" marks 0 "), std::string::npos) << said;
  EXPECT_NE(said.find(" text on a mark 0: "), std::string::npos) << said;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainscope::report
