#include "training/data/records.h"

#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include "kernels/check.h"

namespace trainscope::training {
namespace {

const std::string& string_field(const nlohmann::json& object, const char* name,
                                std::string_view where) {
  const auto it = object.find(name);
  if (it == object.end()) {
    throw Error(fmt::format("{}: record has no '{}' field", where, name));
  }
  if (!it->is_string()) {
    throw Error(fmt::format("{}: field '{}' is a {}, not a string", where, name, it->type_name()));
  }
  return it->get_ref<const std::string&>();
}

}  // namespace

std::vector<ChatMessage> instruction_to_messages(std::string_view instruction,
                                                 std::string_view context,
                                                 std::string_view response) {
  std::string user;
  user.reserve(kAssistantPreamble.size() + instruction.size() + context.size() + 16);
  user += kAssistantPreamble;
  user += "\n\n";
  user += instruction;
  if (!context.empty()) {
    user += "\n\nContext: ";
    user += context;
  }
  return {ChatMessage{"user", std::move(user)}, ChatMessage{"assistant", std::string(response)}};
}

Record parse_record(const nlohmann::json& value, std::string_view text_field,
                    std::string_view where) {
  if (!value.is_object()) {
    throw Error(fmt::format("{}: record is a JSON {}, not an object", where, value.type_name()));
  }
  Record record;
  if (const auto it = value.find("messages"); it != value.end()) {
    if (!it->is_array()) {
      throw Error(fmt::format("{}: field 'messages' is a {}, not an array", where, it->type_name()));
    }
    if (it->empty()) throw Error(fmt::format("{}: field 'messages' is empty", where));
    record.kind = RecordKind::kChat;
    int index = 0;
    for (const auto& message : *it) {
      const std::string at = fmt::format("{}: messages[{}]", where, index++);
      if (!message.is_object()) throw Error(at + " is not an object");
      ChatMessage m{string_field(message, "role", at), string_field(message, "content", at)};
      if (m.role.empty()) throw Error(at + ": field 'role' is empty");
      record.messages.push_back(std::move(m));
    }
    return record;
  }
  if (value.contains("instruction")) {
    record.kind = RecordKind::kInstruction;
    std::string_view context;
    if (const auto it = value.find("context"); it != value.end() && !it->is_null()) {
      context = string_field(value, "context", where);
    }
    record.messages = instruction_to_messages(string_field(value, "instruction", where), context,
                                              string_field(value, "response", where));
    return record;
  }
  const std::string field(text_field);
  if (!value.contains(field)) {
    throw Error(fmt::format("{}: record has no '{}' field (nor 'messages' or 'instruction')", where,
                            text_field));
  }
  record.kind = RecordKind::kText;
  record.text = string_field(value, field.c_str(), where);
  return record;
}

Record parse_record_line(std::string_view line, std::string_view text_field,
                         std::string_view where) {
  if (const int64_t bad = find_invalid_utf8(line); bad >= 0) {
    throw Error(fmt::format("{}: invalid UTF-8 at byte {} of the line", where, bad + 1));
  }
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: malformed JSON: {}", where, e.what()));
  }
  return parse_record(value, text_field, where);
}

void render_chat(std::span<const ChatMessage> messages, std::string* out) {
  for (const ChatMessage& m : messages) {
    *out += "<|";
    *out += m.role;
    *out += "|>\n";
    *out += m.content;
    *out += '\n';
  }
}

void render_record(const Record& record, std::string* out) {
  if (record.kind == RecordKind::kText) {
    *out += record.text;
  } else {
    render_chat(record.messages, out);
  }
}

nlohmann::json record_to_json(const Record& record) {
  if (record.kind == RecordKind::kText) return nlohmann::json{{"text", record.text}};
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : record.messages) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  return nlohmann::json{{"messages", std::move(messages)}};
}

int64_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t word;
      __builtin_memcpy(&word, s + i, 8);
      if (word & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + len > n) return static_cast<int64_t>(i);
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
      return static_cast<int64_t>(i);
    }
    i += len;
  }
  return -1;
}

}  // namespace trainscope::training
