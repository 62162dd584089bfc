// Cross-world-size check of the equivalence matrix: the runs at 1, 2 and 4 ranks (same global batch,
// same samples) give the same losses and final parameter norm within a stated bound. They cannot be
// bitwise equal: a micro-batch's gradient is a GEMM sum over its rows, and the rows a rank holds
// change with the world size. fp32: 1e-6 relative (measured: 5e-8 on losses, 5e-10 on the norm);
// emulated bf16: 1e-4 relative (measured: 2e-5), since each bf16 rounding amplifies the reordering.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

nlohmann::json load(const std::string& dir, int w) {
  std::ifstream in(dir + "/matrix_w" + std::to_string(w) + ".json");
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

std::string g_dir;

TEST(EngineCrossWorld, LossesAndNormsAgreeAcrossWorldSizes) {
  const auto ref = load(g_dir, 1);
  ASSERT_FALSE(ref.is_null()) << "matrix_w1.json missing in " << g_dir << ": run engine_matrix_np1 first";
  ASSERT_EQ(ref.size(), 8u);
  int compared = 0;
  for (int w : {2, 4}) {
    const auto other = load(g_dir, w);
    if (other.is_null()) continue;  // built without MPI: nothing to compare at this size
    for (const auto& [key, r] : ref.items()) {
      SCOPED_TRACE(key + " at world size " + std::to_string(w));
      ASSERT_TRUE(other.contains(key));
      const double tol = key.rfind("fp32", 0) == 0 ? 1e-6 : 1e-4;
      const auto& a = r["losses"];
      const auto& b = other[key]["losses"];
      ASSERT_EQ(a.size(), b.size());
      for (size_t s = 0; s < a.size(); ++s)
        EXPECT_NEAR(b[s].get<double>(), a[s].get<double>(), tol * a[s].get<double>()) << "step " << s;
      EXPECT_NEAR(other[key]["l2"].get<double>(), r["l2"].get<double>(), tol * r["l2"].get<double>());
      ++compared;
    }
  }
#if ZT_HAVE_MPI
  EXPECT_EQ(compared, 16) << "the 2- and 4-rank matrix runs did not leave their results";
#endif
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_dir = argc > 1 ? argv[1] : ".";
  return RUN_ALL_TESTS();
}
