// probe_path on this machine's real file systems (/ , /dev/shm, /proc), a missing path and a
// plain file; the statfs magic table; /proc/meminfo parsing and probe_machine.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/plan/fs_types.h"
#include "runtime/plan/machine_probe.h"
#include "runtime/plan/process_memory.h"

namespace zt {
namespace {

TEST(ProbePath, RootIsALocalDirectory) {
  const PathInfo i = probe_path("/");
  EXPECT_TRUE(i.exists);
  EXPECT_TRUE(i.is_dir);
  EXPECT_FALSE(i.is_network);
  // Containers mount / as overlay; VMs and bare metal as ext4, xfs or btrfs.
  EXPECT_TRUE(i.fs_type == "ext4" || i.fs_type == "overlay" || i.fs_type == "xfs" || i.fs_type == "btrfs")
      << i.fs_type;
  EXPECT_GT(i.total_bytes, 0u);
  EXPECT_LE(i.free_bytes, i.total_bytes);
}

TEST(ProbePath, DevShmIsWritableTmpfs) {
  const PathInfo i = probe_path("/dev/shm");
  if (!i.exists) GTEST_SKIP() << "/dev/shm is not mounted here";
  EXPECT_EQ(i.fs_type, "tmpfs");
  EXPECT_TRUE(i.is_dir);
  EXPECT_TRUE(i.writable);
  EXPECT_FALSE(i.is_network);
}

TEST(ProbePath, ProcIsRecognised) {
  const PathInfo i = probe_path("/proc");
  EXPECT_TRUE(i.exists);
  EXPECT_EQ(i.fs_type, "proc");
  EXPECT_FALSE(i.is_network);
  EXPECT_EQ(i.free_bytes, 0u);  // nothing can be stored there
}

TEST(ProbePath, MissingPathAndEmptyPath) {
  const PathInfo i = probe_path("/no/such/zerotrain/path");
  EXPECT_FALSE(i.exists);
  EXPECT_FALSE(i.is_dir);
  EXPECT_FALSE(i.writable);
  EXPECT_EQ(i.error, "No such file or directory");
  const PathInfo e = probe_path("");
  EXPECT_FALSE(e.exists);
  EXPECT_FALSE(e.error.empty());
}

TEST(ProbePath, FileIsNotADirectoryAndUnwritableDirWhenNotRoot) {
  char dir_tpl[] = "/tmp/zt_probe_XXXXXX";
  ASSERT_NE(mkdtemp(dir_tpl), nullptr);
  const std::string dir = dir_tpl;
  const std::string file = dir + "/f.bin";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);

  const PathInfo fi = probe_path(file);
  EXPECT_TRUE(fi.exists);
  EXPECT_FALSE(fi.is_dir);
  EXPECT_EQ(fi.fs_type, probe_path(dir).fs_type);  // a file reports its file system too
  const PathInfo under_file = probe_path(file + "/sub");
  EXPECT_FALSE(under_file.exists);
  EXPECT_EQ(under_file.error, "Not a directory");

  EXPECT_TRUE(probe_path(dir).writable);
  ASSERT_EQ(chmod(dir.c_str(), 0555), 0);
  // root passes access(W_OK) on any directory of a read-write mount; others must see "not writable".
  if (geteuid() != 0) {
    EXPECT_FALSE(probe_path(dir).writable);
  }
  chmod(dir.c_str(), 0755);
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

TEST(FsTypes, MagicNumbersAndNetworkFlags) {
  struct Case {
    uint64_t magic;
    const char* name;
    bool network;
  } cases[] = {
      {0xEF53, "ext4", false},       {0x58465342, "xfs", false},   {0x9123683E, "btrfs", false},
      {0x01021994, "tmpfs", false},  {0x794C7630, "overlay", false}, {0x2FC12FC1, "zfs", false},
      {0x6969, "nfs", true},         {0xFF534D42, "cifs", true},   {0x517B, "smb", true},
      {0xFE534D42, "smb2", true},    {0x01021997, "9p", true},     {0x65735546, "fuse", true},
      {0x00C36400, "ceph", true},    {0x0BD00BD0, "lustre", true}, {0x47504653, "gpfs", true},
      {0x5346414F, "afs", true},     {0x9FA0, "proc", false},
      // statfs's f_type is a signed long: a sign-extended CIFS magic is still CIFS.
      {0xFFFFFFFFFF534D42ull, "cifs", true},
  };
  for (const auto& c : cases) {
    const FsType t = fs_type_from_magic(c.magic);
    EXPECT_EQ(t.name, c.name) << std::hex << c.magic;
    EXPECT_EQ(t.is_network, c.network) << c.name;
  }
  EXPECT_EQ(fs_type_from_magic(0x12345678).name, "unknown");
  EXPECT_FALSE(fs_type_from_magic(0x12345678).is_network);
}

TEST(ProbeMachine, MeminfoParsingAndLiveValues) {
  MachineFacts f;
  parse_meminfo("MemTotal:       24588452 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n", f);
  EXPECT_EQ(f.host_mem_total, 24588452ull * 1024);
  EXPECT_EQ(f.host_mem_available, 20000000ull * 1024);

  const MachineFacts live = probe_machine();
  EXPECT_GT(live.host_mem_total, 0u);
  EXPECT_GT(live.host_mem_available, 0u);
  EXPECT_LE(live.host_mem_available, live.host_mem_total);
  EXPECT_EQ(live.gpu_free.has_value(), live.gpu_total.has_value());
  if (live.gpu_total) {
    EXPECT_LE(*live.gpu_free, *live.gpu_total);
  }
}

TEST(ProcessMemory, StatusParsingLiveValuesAndPeakReset) {
  const ProcessMemory m = parse_process_status(
      "Name:\tzerotrain\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nRssAnon:\t 512 kB\n"
      "RssShmem:\t      64 kB\n");
  EXPECT_TRUE(m.known);
  EXPECT_EQ(m.rss, 1024u * 1024);
  EXPECT_EQ(m.hwm, 2048u * 1024);
  EXPECT_EQ(m.rss_shmem, 64u * 1024);
  EXPECT_FALSE(parse_process_status("Name: x\nVmRSS: 5 kB\n").known) << "both VmRSS and VmHWM are needed";

  // Live: touching 64 MiB raises the resident set and its peak by about that much.
  const ProcessMemory before = read_process_memory();
  ASSERT_TRUE(before.known);
  EXPECT_GE(before.hwm, before.rss);
  std::vector<char> touched(size_t(64) << 20, 1);
  const ProcessMemory after = read_process_memory();
  EXPECT_GE(after.rss, before.rss + (size_t(60) << 20)) << int(touched[12345]);
  EXPECT_GE(after.hwm, after.rss);
  touched = std::vector<char>();
  // After a reset the peak starts again from the resident set of that moment (which may still hold
  // the freed block: an allocator, or a sanitizer's quarantine, need not return it), so it is the
  // current RSS give or take what the process touched between the two reads, not the old peak.
  if (reset_process_peak()) {
    const ProcessMemory reset = read_process_memory();
    EXPECT_GE(reset.hwm, reset.rss);
    EXPECT_LE(reset.hwm, reset.rss + (size_t(4) << 20)) << "the peak starts again from the current resident set";
    if (reset.rss + (size_t(32) << 20) < after.rss) EXPECT_LT(reset.hwm, after.hwm);
  }
}

}  // namespace
}  // namespace zt
