// File-system identification from statfs's f_type magic number: a short name ("ext4", "tmpfs",
// "nfs", ...) and whether the file system is network-backed (NFS, CIFS/SMB, 9p, FUSE, Ceph, ...).
#pragma once

#include <cstdint>
#include <string>

namespace zt {

struct FsType {
  std::string name = "unknown";  // "unknown" for an unrecognised magic number
  bool is_network = false;
};

FsType fs_type_from_magic(uint64_t magic);

}  // namespace zt
