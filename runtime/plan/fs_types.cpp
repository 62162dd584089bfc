// The statfs magic numbers of the file systems a training job meets (values from the kernel's
// include/uapi/linux/magic.h and the file systems' own headers). ext2/3/4 share one magic number.
#include "runtime/plan/fs_types.h"

#include <array>

namespace zt {

namespace {
struct Entry {
  uint64_t magic;
  const char* name;
  bool network;
};

constexpr std::array kTable = {
    Entry{0xEF53, "ext4", false},  // ext2, ext3 and ext4 all report 0xEF53
    Entry{0x58465342, "xfs", false},
    Entry{0x9123683E, "btrfs", false},
    Entry{0x01021994, "tmpfs", false},
    Entry{0x858458F6, "ramfs", false},
    Entry{0x958458F6, "hugetlbfs", false},
    Entry{0x794C7630, "overlay", false},
    Entry{0x2FC12FC1, "zfs", false},
    Entry{0xF2F52010, "f2fs", false},
    Entry{0x73717368, "squashfs", false},
    Entry{0x4D44, "vfat", false},
    Entry{0x2011BAB0, "exfat", false},
    Entry{0x5346544E, "ntfs", false},
    Entry{0x9660, "iso9660", false},
    Entry{0x9FA0, "proc", false},
    Entry{0x62656572, "sysfs", false},
    Entry{0x1CD1, "devpts", false},
    Entry{0x63677270, "cgroup2", false},
    Entry{0x27E0EB, "cgroup", false},
    Entry{0xCAFE4A11, "bpf", false},
    Entry{0x64626720, "debugfs", false},
    Entry{0x74726163, "tracefs", false},
    Entry{0x6969, "nfs", true},
    Entry{0xFF534D42, "cifs", true},
    Entry{0x517B, "smb", true},
    Entry{0xFE534D42, "smb2", true},
    Entry{0x01021997, "9p", true},
    Entry{0x65735546, "fuse", true},
    Entry{0x00C36400, "ceph", true},
    Entry{0x0BD00BD0, "lustre", true},
    Entry{0x47504653, "gpfs", true},
    Entry{0x5346414F, "afs", true},
    Entry{0x6B414653, "afs", true},  // kAFS
    Entry{0x19830326, "beegfs", true},
    Entry{0x20030528, "orangefs", true},
    Entry{0x564C, "ncpfs", true},
};
}  // namespace

FsType fs_type_from_magic(uint64_t magic) {
  // f_type is a signed long on some ABIs: compare the low 32 bits.
  const uint64_t m = magic & 0xFFFFFFFFull;
  for (const Entry& e : kTable) {
    if (e.magic == m) return FsType{e.name, e.network};
  }
  return FsType{};
}

}  // namespace zt
