// Open MPI hostfiles (suite_config.h declares the interface): the grammar of
// Open MPI 4.1's hostfile lexer and parser (orte/util/hostfile), checked
// against mpirun 4.1.4 itself:
//
//   [user@]host [slots=N] [max_slots=N]     # a comment; also // to the end
//
// `slots` is also `count` or `cpu`; `max_slots` also max-slots, slots_max,
// slots-max, max_cpu, max-cpu, cpu_max, cpu-max, max_count, max-count,
// count_max, count-max; `key = N` may have spaces around '='. A host named on
// several lines gets a slot per bare line plus the one slot count given
// (mpirun refuses two); max_slots alone means slots = max_slots; slots=0
// leaves the host out (mpirun places no rank there).
//
// Not accepted (an error naming the line, never a silent misreading): /* */
// comments and Open MPI's rarer keywords (username=, boards=, sockets=,
// cores=, cpu_set=, rank lines), which no trainscope job needs.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/quote.h"
#include "suites/suite_config.h"

namespace trainscope::suites {
namespace {

constexpr long kMaxSlots = 1 << 20;

bool is_slots_word(const std::string& key) {
  return key == "slots" || key == "count" || key == "cpu";
}

bool is_max_slots_word(const std::string& key) {
  static const char* const kWords[] = {"max_slots", "max-slots", "slots_max", "slots-max",
                                       "max_cpu",   "max-cpu",   "cpu_max",   "cpu-max",
                                       "max_count", "max-count", "count_max", "count-max"};
  return std::find(std::begin(kWords), std::end(kWords), key) != std::end(kWords);
}

// The words of one line: the comment cut off and `key = value` joined into
// `key=value`.
std::vector<std::string> words_of(std::string line) {
  for (const char* comment : {"#", "//"}) {
    if (auto at = line.find(comment); at != std::string::npos) line.resize(at);
  }
  std::string joined;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '=') {
      while (!joined.empty() && (joined.back() == ' ' || joined.back() == '\t')) joined.pop_back();
      joined += '=';
      while (i + 1 < line.size() && (line[i + 1] == ' ' || line[i + 1] == '\t')) ++i;
    } else {
      joined += line[i];
    }
  }
  std::istringstream in(joined);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// A host as the lines so far describe it.
struct HostLines {
  HostEntry entry;
  int bare_lines = 0;  // lines naming it without a slot count
  int slots_line = 0;  // the line that gave its slot count, 0: none
  int max_slots_line = 0;
};

}  // namespace

std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& source_name) {
  std::vector<HostLines> hosts;  // in the order of their first line
  std::map<std::string, std::size_t> index;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::vector<std::string> words = words_of(line);
    if (words.empty()) continue;
    const auto fail = [&](const std::string& what) -> Error {
      return Error(fmt::format("{}:{}: {}", source_name, line_no, what));
    };
    if (line.find("/*") != std::string::npos) {
      throw fail("/* */ comments are not supported here: use # (to the end of the line)");
    }
    std::string host = words[0];
    if (host.find('=') != std::string::npos || is_slots_word(host) || is_max_slots_word(host)) {
      throw fail(fmt::format("{}: a line starts with the host name, e.g. 'node1 slots=4'",
                             quoted_for_terminal(host)));
    }
    std::string user;
    if (const auto at = host.find('@'); at != std::string::npos) {
      user = host.substr(0, at);
      host = host.substr(at + 1);
      if (user.empty() || host.empty() || host.find('@') != std::string::npos) {
        throw fail(fmt::format("{} is not [user@]host", quoted_for_terminal(words[0])));
      }
    }
    // Host and user names are printable ASCII (DNS, /etc/hosts, ssh): other
    // bytes mean the file is not a hostfile, and must not reach a terminal.
    const auto not_name_char = [](char c) {
      return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
    };
    if (std::any_of(words[0].begin(), words[0].end(), not_name_char)) {
      throw fail(fmt::format("{} is not a host name (printable ASCII only)",
                             quoted_for_terminal(words[0])));
    }
    auto [it, added] = index.try_emplace(host, hosts.size());
    if (added) hosts.push_back({HostEntry{host, 0, 0, user}});
    HostLines& h = hosts[it->second];
    bool gave_slots = false;
    for (std::size_t i = 1; i < words.size(); ++i) {
      const std::string& word = words[i];
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (eq == std::string::npos || (!is_slots_word(key) && !is_max_slots_word(key))) {
        throw fail(fmt::format("unexpected {} after host {} (expected slots=N or max_slots=N)",
                               quoted_for_terminal(word), quoted_for_terminal(host)));
      }
      const std::string value = word.substr(eq + 1);
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || value[0] == '-' || value[0] == '+' || n > kMaxSlots) {
        throw fail(fmt::format("{} must be a whole number 0..{}, got {}", key, kMaxSlots,
                               quoted_for_terminal(value)));
      }
      if (is_slots_word(key)) {
        if (h.slots_line != 0 && h.slots_line != line_no) {
          throw fail(
              fmt::format("host {} has its slot count on line {} already (Open MPI refuses "
                          "two): give it once, or list the host once per slot",
                          quoted_for_terminal(host), h.slots_line));
        }
        h.entry.slots = static_cast<int>(n);
        h.slots_line = line_no;
        gave_slots = true;
      } else {
        h.entry.max_slots = static_cast<int>(n);
        h.max_slots_line = line_no;
      }
    }
    if (!gave_slots && h.max_slots_line != line_no) ++h.bare_lines;
  }

  std::vector<HostEntry> out;
  for (HostLines& h : hosts) {
    HostEntry& e = h.entry;
    if (h.slots_line == 0 && h.bare_lines == 0) e.slots = e.max_slots;  // max_slots alone
    e.slots += h.bare_lines;
    if (h.max_slots_line != 0 && e.max_slots < e.slots) {
      throw Error(fmt::format("{}:{}: host {}: max_slots={} is below its {} slots", source_name,
                              h.max_slots_line, quoted_for_terminal(e.host), e.max_slots, e.slots));
    }
    if (e.slots > 0) out.push_back(e);
  }
  if (out.empty()) {
    throw Error(fmt::format("{}: hostfile lists no hosts{}", source_name,
                            hosts.empty() ? "" : " with slots (every host has slots=0)"));
  }
  return out;
}

std::vector<HostEntry> load_hostfile(const std::filesystem::path& path) {
  return parse_hostfile(read_file(path), path.string());
}

void write_hostfile(const std::filesystem::path& path, const std::vector<HostEntry>& hosts,
                    int slots) {
  std::string text;
  for (const auto& h : hosts) {
    text += fmt::format("{}{} slots={}", h.user.empty() ? "" : h.user + "@", h.host,
                        slots > 0 ? slots : h.slots);
    if (slots <= 0 && h.max_slots > 0) text += fmt::format(" max_slots={}", h.max_slots);
    text += '\n';
  }
  write_file_atomically(path, text);
}

}  // namespace trainscope::suites
