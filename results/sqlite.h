// A thin RAII layer over the SQLite C API for the results database: a
// connection, a prepared statement and a transaction guard. It exists so that
// every handle is released and every failed transaction rolled back on all
// paths, and so that every SQLite error becomes one trainscope::Error naming
// the database file, with the common causes (not a database, corrupt,
// locked, unwritable) spelled out for the user.
//
// Thread-safety: a Connection and its Statements belong to one thread at a
// time (SQLite's multi-thread mode); use one Connection per thread.
#ifndef TRAINSCOPE_RESULTS_SQLITE_H_
#define TRAINSCOPE_RESULTS_SQLITE_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace trainscope::results::sqlite {

class Connection {
 public:
  enum class Mode {
    kReadOnly,   // the file must exist; writes fail
    kReadWrite,  // created when missing
  };

  // Opens `path`; busy_timeout_ms is how long a statement waits for another
  // connection's lock before failing with a "locked" error.
  Connection(const std::filesystem::path& path, Mode mode, int busy_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() { return db_; }
  const std::filesystem::path& path() const { return path_; }
  int busy_timeout_ms() const { return busy_timeout_ms_; }

  // Runs one or more statements that return no rows of interest.
  void exec(std::string_view sql, std::string_view context);
  // Runs a statement returning one integer (e.g. a PRAGMA).
  int64_t query_int(std::string_view sql, std::string_view context);
  // Runs a statement returning one text value.
  std::string query_text(std::string_view sql, std::string_view context);

  int64_t last_insert_rowid();
  int64_t changes();

  // Throws trainscope::Error for SQLite result code `rc`, naming the file and
  // what was being done (`context`).
  [[noreturn]] void fail(int rc, std::string_view context) const;

 private:
  std::filesystem::path path_;
  int busy_timeout_ms_;
  sqlite3* db_ = nullptr;
};

// A prepared statement. Bind indexes start at 1, column indexes at 0, as in
// the C API. A non-finite double binds as NULL and a NULL reads back as NaN.
class Statement {
 public:
  Statement(Connection& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) {
    return bind(index, std::string_view(text));
  }
  Statement& bind_null(int index);
  // Binds NULL for std::nullopt.
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances; true while a row is available.
  bool step(std::string_view context);
  // Steps to completion, then resets and clears bindings for reuse.
  void run(std::string_view context);
  void reset();

  bool is_null(int column);
  int64_t column_int64(int column);
  double column_double(int column);
  std::string column_text(int column);
  std::optional<int64_t> column_optional_int64(int column);
  std::optional<std::string> column_optional_text(int column);
  // The column's name in the result (for messages).
  std::string column_name(int column);

 private:
  Connection& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE on construction (takes the write lock up front, so a
// locked database fails here and not halfway through); ROLLBACK in the
// destructor unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Connection& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  void commit();

 private:
  Connection& db_;
  bool open_ = false;
};

// A read transaction: every statement between construction and destruction
// sees the database as of the first read, whatever other connections commit
// meanwhile (WAL keeps that snapshot for us). Ends in the destructor.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& db);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& db_;
};

}  // namespace trainscope::results::sqlite

#endif  // TRAINSCOPE_RESULTS_SQLITE_H_
