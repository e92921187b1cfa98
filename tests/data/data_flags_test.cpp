#include "training/data/data_flags.h"

#include <gtest/gtest.h>

#include "kernels/check.h"

namespace trainscope::training {
namespace {

TEST(DataFlagsTest, ParsesIntoOptionsAndKeepsDefaults) {
  CLI::App app;
  DataOptions o;
  add_data_flags(app, &o);
  app.parse("--no-shuffle --shard contiguous --data-mode sharded --batching pack --block 65 "
            "--split train[0%:50%]",
            /*program_name_included=*/false);
  EXPECT_EQ(o.mode, BatchMode::kPack);
  EXPECT_EQ(o.data_mode, DataMode::kSharded);
  EXPECT_EQ(o.shard, ShardMode::kContiguous);
  EXPECT_FALSE(o.shuffle);
  EXPECT_EQ(o.block, 65);
  EXPECT_EQ(o.split, "train[0%:50%]");
  EXPECT_EQ(o.source, "builtin:stories");
  EXPECT_EQ(o.global_batch, DataOptions().global_batch);
}

TEST(DataFlagsTest, BadEnumValueNamesTheFlag) {
  CLI::App app;
  DataOptions o;
  add_data_flags(app, &o);
  try {
    app.parse("--data-mode sharted", /*program_name_included=*/false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data-mode: unknown value 'sharted'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trainscope::training
