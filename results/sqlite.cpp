#include "results/sqlite.h"

#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/check.h"

namespace trainscope::results::sqlite {

namespace fs = std::filesystem;

Connection::Connection(const fs::path& path, Mode mode, int busy_timeout_ms)
    : path_(path), busy_timeout_ms_(busy_timeout_ms) {
  if (mode == Mode::kReadOnly) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw Error(fmt::format("results database {} does not exist", path.string()));
    }
  } else {
    // SQLite's own message for a directory it cannot use is "unable to open
    // database file" with whatever errno came last; say which part is wrong
    // (the directory must also take the WAL and shared-memory files).
    fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw Error(fmt::format("cannot create results database {}: directory {} does not exist",
                              path.string(), dir.string()));
    }
    check_writable(path, "results database");
  }
  int flags = (mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    int err = db_ ? sqlite3_system_errno(db_) : 0;
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error(fmt::format("cannot open results database {}: {}{}", path.string(), message,
                            err ? fmt::format(" ({})", std::strerror(err)) : ""));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Connection::~Connection() {
  // Statements are owned by RAII objects that outlive no connection, so
  // close_v2 has nothing left to defer.
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view context) const {
  int primary = rc & 0xff;
  std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string file = path_.string();
  switch (primary) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      throw Error(
          fmt::format("{} is not a SQLite database or is corrupt ({}: {})", file, context, detail));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(
          fmt::format("results database {} is locked by another writer (waited {} ms while {}): {}",
                      file, busy_timeout_ms_, context, detail));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN: {
      int err = db_ ? sqlite3_system_errno(db_) : 0;
      throw Error(fmt::format("cannot write results database {} ({}): {}{}", file, context, detail,
                              err ? fmt::format(" ({})", std::strerror(err)) : ""));
    }
    case SQLITE_IOERR:
    case SQLITE_FULL: {
      // The disk failed the work (full, quota, I/O): not the user's input.
      int err = db_ ? sqlite3_system_errno(db_) : 0;
      throw Error(fmt::format("cannot write results database {} ({}): {}{}", file, context, detail,
                              err ? fmt::format(" ({})", std::strerror(err)) : ""),
                  kExitFailure);
    }
    default: throw Error(fmt::format("results database {}: {}: {}", file, context, detail));
  }
}

void Connection::exec(std::string_view sql, std::string_view context) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);  // sqlite3_errmsg still holds the text
  if (rc != SQLITE_OK) fail(rc, context);
}

int64_t Connection::query_int(std::string_view sql, std::string_view context) {
  Statement stmt(*this, sql);
  if (!stmt.step(context)) fail(SQLITE_ERROR, fmt::format("{}: no row", context));
  return stmt.column_int64(0);
}

std::string Connection::query_text(std::string_view sql, std::string_view context) {
  Statement stmt(*this, sql);
  if (!stmt.step(context)) fail(SQLITE_ERROR, fmt::format("{}: no row", context));
  return stmt.column_text(0);
}

int64_t Connection::last_insert_rowid() { return sqlite3_last_insert_rowid(db_); }
int64_t Connection::changes() { return sqlite3_changes64(db_); }

Statement::Statement(Connection& db, std::string_view sql) : db_(db) {
  int rc =
      sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) db.fail(rc, fmt::format("preparing `{}`", sql.substr(0, 60)));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  TS_CHECK(rc == SQLITE_OK) << "bind " << index << ": " << sqlite3_errstr(rc);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = std::isfinite(value) ? sqlite3_bind_double(stmt_, index, value)
                                : sqlite3_bind_null(stmt_, index);
  TS_CHECK(rc == SQLITE_OK) << "bind " << index << ": " << sqlite3_errstr(rc);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  TS_CHECK(rc == SQLITE_OK) << "bind " << index << ": " << sqlite3_errstr(rc);
  return *this;
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  TS_CHECK(rc == SQLITE_OK) << "bind " << index << ": " << sqlite3_errstr(rc);
  return *this;
}

bool Statement::step(std::string_view context) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(stmt_);
  db_.fail(rc, context);
}

void Statement::run(std::string_view context) {
  while (step(context)) {}
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

int64_t Statement::column_int64(int column) { return sqlite3_column_int64(stmt_, column); }

double Statement::column_double(int column) {
  if (is_null(column)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  return text ? std::string(reinterpret_cast<const char*>(text), size) : std::string();
}

std::optional<int64_t> Statement::column_optional_int64(int column) {
  if (is_null(column)) return std::nullopt;
  return column_int64(column);
}

std::optional<std::string> Statement::column_optional_text(int column) {
  if (is_null(column)) return std::nullopt;
  return column_text(column);
}

std::string Statement::column_name(int column) {
  const char* name = sqlite3_column_name(stmt_, column);
  return name ? name : "?";
}

Transaction::Transaction(Connection& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE", "starting a write transaction");
  open_ = true;
}

Transaction::~Transaction() {
  if (!open_) return;
  // Errors are ignored: SQLite may already have rolled back on its own (e.g.
  // after SQLITE_FULL), and a destructor must not throw.
  sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  TS_CHECK(open_) << "commit of a transaction that is not open";
  db_.exec("COMMIT", "committing");
  open_ = false;
}

ReadTransaction::ReadTransaction(Connection& db) : db_(db) {
  TS_CHECK(sqlite3_get_autocommit(db_.handle()))
      << "read snapshot of " << db_.path() << " taken inside another transaction";
  db_.exec("BEGIN DEFERRED", "starting a read transaction");
  // A deferred transaction takes its snapshot at the first read, not at
  // BEGIN: read now, so the snapshot is the moment of construction.
  try {
    db_.query_int("SELECT count(*) FROM sqlite_schema", "starting a read transaction");
  } catch (...) {
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

ReadTransaction::~ReadTransaction() {
  // A read-only transaction has nothing to lose; errors cannot be reported
  // from a destructor and leave nothing behind.
  sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr);
}

}  // namespace trainscope::results::sqlite
