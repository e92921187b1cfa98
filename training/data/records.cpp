#include "training/data/records.h"

#include <nlohmann/json.hpp>
#include <fmt/core.h>

#include "base/check.h"
#include "base/json_reader.h"

namespace trainscope::training {
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

namespace {

Record read_record(const JsonReader& r, std::string_view text_field) {
  r.require_object();
  Record record;
  if (r.contains("messages")) {
    const JsonReader messages = r["messages"];
    if (messages.size() == 0) messages.fail("is empty");
    record.kind = RecordKind::kChat;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      ChatMessage m{messages[i]["role"].get<std::string>(),
                    messages[i]["content"].get<std::string>()};
      if (m.role.empty()) messages[i]["role"].fail("is empty");
      record.messages.push_back(std::move(m));
    }
    return record;
  }
  if (r.contains("instruction")) {
    record.kind = RecordKind::kInstruction;
    record.messages = instruction_to_messages(r["instruction"].get<std::string>(),
                                              r.get_or<std::string>("context", ""),
                                              r["response"].get<std::string>());
    return record;
  }
  if (!r.contains(text_field)) {
    throw Error(
        fmt::format("record has no '{}' field (nor 'messages' or 'instruction')", text_field));
  }
  record.kind = RecordKind::kText;
  record.text = r[text_field].get<std::string>();
  return record;
}

}  // namespace

Record parse_record(const nlohmann::json& value, std::string_view text_field,
                    std::string_view where) {
  return JsonReader::rethrow_in(where, [&] { return read_record(JsonReader(value), text_field); });
}

Record parse_record_line(std::string_view line, std::string_view text_field,
                         std::string_view where) {
  if (const int64_t bad = find_invalid_utf8(line); bad >= 0) {
    throw Error(fmt::format("{}: invalid UTF-8 at byte {} of the line", where, bad + 1));
  }
  return parse_record(parse_json(line, where), text_field, where);
}

std::string chat_header(std::string_view role) { return "<|" + std::string(role) + "|>\n"; }

void render_chat(std::span<const ChatMessage> messages, std::string* out) {
  for (const ChatMessage& m : messages) {
    *out += chat_header(m.role);
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

}  // namespace trainscope::training
