// Records: what one JSONL line may hold, and how it becomes training text.
//
// Three record kinds are recognised, checked in this order:
//  * chat:        {"messages": [{"role": "user", "content": "..."}, ...]}
//  * instruction: {"instruction": "...", "context": "...", "response": "..."}
//                 ("context" optional), converted to two chat messages:
//                   user      = "You are a helpful assistant.\n\n{instruction}"
//                               + "\n\nContext: {context}"  (left out entirely
//                               when context is missing or empty)
//                   assistant = "{response}"
//  * text:        {"<text_field>": "..."} (text_field defaults to "text").
//
// The chat template (render_chat): each message becomes
//     "<|" + role + "|>\n" + content + "\n"
// and the messages are joined with nothing in between, e.g.
//     <|user|>\nHi there\n<|assistant|>\nHello!\n
// The rendered text does not itself end with "<|endoftext|>": the batcher
// appends end-of-text after every document (pack) or pads with it (pad, where
// the first end-of-text is a predicted target), so each rendered conversation
// ends with exactly one end-of-text token in the token stream. Roles are any
// non-empty strings (system, user, assistant are the usual ones).
//
// All functions are pure and thread-safe.
#ifndef TRAINSCOPE_TRAINING_DATA_RECORDS_H_
#define TRAINSCOPE_TRAINING_DATA_RECORDS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/utf8.h"  // find_invalid_utf8

namespace trainscope::training {

inline constexpr std::string_view kAssistantPreamble = "You are a helpful assistant.";

struct ChatMessage {
  std::string role;
  std::string content;
};

enum class RecordKind { kText, kChat, kInstruction };

struct Record {
  RecordKind kind = RecordKind::kText;
  std::string text;                   // kText
  std::vector<ChatMessage> messages;  // kChat, kInstruction (already converted)
};

// Parses one decoded JSON value into a Record. `where` (e.g. "data.jsonl:12")
// prefixes the message of the trainscope::Error thrown for a record that is
// not an object, lacks the needed field, or has a field of the wrong type.
Record parse_record(const nlohmann::json& value, std::string_view text_field,
                    std::string_view where);

// Parses one JSONL line (UTF-8 checked first) into a Record; throws
// trainscope::Error naming `where` for invalid UTF-8 or malformed JSON.
Record parse_record_line(std::string_view line, std::string_view text_field,
                         std::string_view where);

std::vector<ChatMessage> instruction_to_messages(std::string_view instruction,
                                                 std::string_view context,
                                                 std::string_view response);

// Appends the chat template rendering of `messages` to *out.
void render_chat(std::span<const ChatMessage> messages, std::string* out);
// The header render_chat writes before a message of `role` ("<|assistant|>\n"):
// where a chat's answer starts (--mask-prompt) and what a prompt ends with
// for the model to answer (generate --chat).
std::string chat_header(std::string_view role);
// Appends the training text of `record` to *out (render_chat for chats).
void render_record(const Record& record, std::string* out);

// The record as one JSON object: {"messages": [...]} for chat and instruction
// records, {"text": ...} for text records (there are no turns to invent).
nlohmann::json record_to_json(const Record& record);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_RECORDS_H_
