// --describe of a study built on the skeleton: its axes by name in entry-name order, its run points,
// the rules of its counters, and the entries the options select, each with its axes by name.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "harness/study.hpp"

namespace gpubench {
namespace {

const std::vector<Implementation>& table() {
  static const std::vector<Implementation> all = [] {
    Implementation loop{"loop", Device::cpu, {"host"}, {"fp32", "fp64"}};
    loop.threads = one_thread;
    Implementation kernel{"kernel", Device::gpu, {"resident", "copied"}, {"fp32"}};
    return std::vector<Implementation>{loop, kernel};
  }();
  return all;
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "describe_test";
  study.implementations = rows(table());
  study.modes = {"host", "resident", "copied"};
  study.default_sizes = {16, 32, 64};
  study.default_batches = {1, 8};
  study.axes.impl = "engine";
  study.axes.n = "bytes";
  study.axes.n_unit = "bytes";
  study.axes.batch = "chunks";
  study.axes.batch_unit = "chunks";
  study.axes.about = {{"impl", "what copies"}};
  study.quick.sizes = {32};
  study.quick.batches = {1};
  study.suite.sizes = {16, 64};
  study.suite.batches = {1, 8};
  study.suite.impls = {"kernel"};
  study.suite.modes = {"resident"};
  study.counters = {{"flop", "FLOP", "n a call"}, {"bytes_transferred", "bytes", "n, whether or not it crosses"}};
  study.rules = {{"bandwidth", "bytes_transferred / time"}};
  study.describe = [] { return Json{{"own", "field"}}; };
  study.describe_implementation = [](const Implementation& impl) { return Json{{"loops", impl.id == "loop"}}; };
  return study;
}

std::vector<std::string> names_of(const Json& items) {
  std::vector<std::string> names;
  for (const Json& item : items) names.push_back(item["name"].get<std::string>());
  return names;
}

TEST(StudyDescribe, AxesByNameInEntryNameOrder) {
  const Json d = describe(definition(), StudyOptions{}, "", "");
  const Json& axes = d["axes"];
  EXPECT_EQ(names_of(axes), (std::vector<std::string>{"engine", "device", "mode", "precision", "bytes", "chunks"}));
  std::vector<std::string> slots;
  for (const Json& axis : axes) slots.push_back(axis["slot"].get<std::string>());
  EXPECT_EQ(slots, (std::vector<std::string>{"impl", "device", "mode", "precision", "n", "batch"}));
  EXPECT_EQ(axes[0]["values"], Json::array({"loop", "kernel"}));
  EXPECT_EQ(axes[0]["description"], "what copies");
  EXPECT_EQ(axes[1]["values"], Json::array({"cpu", "gpu"}));
  EXPECT_EQ(axes[2]["values"], Json::array({"host", "resident", "copied"}));
  EXPECT_EQ(axes[3]["values"], Json::array({"fp32", "fp64"}));
  EXPECT_TRUE(axes[3]["unit"].is_null());
  EXPECT_EQ(axes[4]["unit"], "bytes");
  EXPECT_TRUE(axes[4]["values"].is_null());  // a numeric axis: its values are the run's
  EXPECT_EQ(axes[5]["unit"], "chunks");
  EXPECT_FALSE(axes[2].contains("description"));
  // axis_names, which older readers take, says the same.
  EXPECT_EQ(d["axis_names"]["impl"], "engine");
  EXPECT_EQ(d["axis_names"]["batch"], "chunks");
}

TEST(StudyDescribe, WithoutABatchAxisTheAxesEndAtN) {
  StudyDefinition study = definition();
  study.default_batches.clear();
  const Json d = describe(study, StudyOptions{}, "", "");
  EXPECT_EQ(names_of(d["axes"]), (std::vector<std::string>{"engine", "device", "mode", "precision", "bytes"}));
  EXPECT_FALSE(d["points"]["quick"].contains("batches"));
  EXPECT_FALSE(d["entries"][0]["axes"].contains("chunks"));
}

TEST(StudyDescribe, PointsOfEachKindOfRun) {
  const Json points = describe(definition(), StudyOptions{}, "", "")["points"];
  EXPECT_EQ(points["quick"], (Json{{"sizes", {32}}, {"batches", {1}}}));  // every implementation and mode
  EXPECT_EQ(points["suite"],
            (Json{{"sizes", {16, 64}}, {"batches", {1, 8}}, {"impls", {"kernel"}}, {"modes", {"resident"}}}));
  EXPECT_EQ(points["full"], (Json{{"sizes", {16, 32, 64}}, {"batches", {1, 8}}}));
}

TEST(StudyDescribe, RulesDeclareEveryCounterWithItsUnit) {
  const Json rules = describe(definition(), StudyOptions{}, "", "")["rules"];
  EXPECT_EQ(rules["bandwidth"], "bytes_transferred / time");
  const Json& counters = rules["counters"];
  for (const char* name : {"n", "batch", "threads", "flop", "h2d_bytes", "d2h_bytes", "bytes_transferred",
                           "sm_clock_mhz", "power_w", "gpu_util_mean"})
    EXPECT_TRUE(counters.contains(name)) << name;
  EXPECT_EQ(counters["n"]["unit"], "bytes");
  EXPECT_EQ(counters["flop"], (Json{{"unit", "FLOP"}, {"rule", "n a call"}}));
  // The study's own rule of a skeleton counter replaces the skeleton's.
  EXPECT_EQ(counters["bytes_transferred"]["rule"], "n, whether or not it crosses");
  for (const auto& [name, counter] : counters.items()) {
    EXPECT_TRUE(counter.contains("unit")) << name;
    EXPECT_TRUE(counter["rule"].is_string()) << name;
  }
}

TEST(StudyDescribe, OnlyAStudyWithGpuRowsDeclaresTheTelemetryCounters) {
  StudyDefinition study = definition();
  study.implementations.pop_back();  // the CPU row alone
  const Json counters = describe(study, StudyOptions{}, "", "")["rules"]["counters"];
  EXPECT_FALSE(counters.contains("sm_clock_mhz"));
  EXPECT_FALSE(counters.contains("gpu_util_mean"));
  EXPECT_TRUE(counters.contains("threads"));
}

TEST(StudyDescribe, EntriesAreTheSelectedOnesInRunOrderWithTheirAxes) {
  const StudyDefinition study = definition();
  const Json d = describe(study, StudyOptions{}, "", "");
  std::vector<std::string> expected;
  for (const Entry& entry : selected_entries(StudyOptions{}, study, true)) expected.push_back(entry.name);
  ASSERT_EQ(names_of(d["entries"]), expected);
  std::set<std::string> axis_names;
  for (const std::string& name : names_of(d["axes"])) axis_names.insert(name);
  for (const Json& entry : d["entries"]) {
    std::set<std::string> keys;
    for (const auto& [key, value] : entry["axes"].items()) keys.insert(key);
    EXPECT_EQ(keys, axis_names) << entry["name"];
  }
  const Json& first = d["entries"][0];
  EXPECT_EQ(first["name"], "describe_test/loop/cpu/host/fp32/n:16/batch:1");
  EXPECT_EQ(first["axes"], (Json{{"engine", "loop"},
                                 {"device", "cpu"},
                                 {"mode", "host"},
                                 {"precision", "fp32"},
                                 {"bytes", 16},
                                 {"chunks", 1}}));
}

TEST(StudyDescribe, EntriesFollowTheOptionsAndTheGpu) {
  const StudyDefinition study = definition();
  StudyOptions options;
  options.sizes = {64};
  options.batches = {8};
  const Json without_gpu = describe(study, options, "no GPU here", "no GPU: no GPU here");
  EXPECT_EQ(names_of(without_gpu["entries"]),
            (std::vector<std::string>{"describe_test/loop/cpu/host/fp32/n:64/batch:8",
                                      "describe_test/loop/cpu/host/fp64/n:64/batch:8"}));
  EXPECT_EQ(without_gpu["gpu"], (Json{{"available", false}, {"reason", "no GPU here"}}));
  options.impls = {"kernel"};
  options.modes = {"copied"};
  const Json kernel = describe(study, options, "", "");
  EXPECT_EQ(names_of(kernel["entries"]),
            (std::vector<std::string>{"describe_test/kernel/gpu/copied/fp32/n:64/batch:8"}));
}

TEST(StudyDescribe, TheStudysOwnFieldsAreMergedIn) {
  const Json d = describe(definition(), StudyOptions{}, "", "");
  EXPECT_EQ(d["own"], "field");
  EXPECT_EQ(d["implementations"][0]["id"], "loop");
  EXPECT_EQ(d["implementations"][0]["loops"], true);
  EXPECT_EQ(d["implementations"][1]["loops"], false);
  EXPECT_EQ(d["default_sizes"], Json::array({16, 32, 64}));
  EXPECT_TRUE(d["measurement"].is_object());
}

}  // namespace
}  // namespace gpubench
