// Private: POSIX file access for src/serialize (whole-file reads and maps, atomic writes).
#pragma once

#include <cstddef>
#include <string>

namespace ember::serialize::detail {

// An owned file descriptor, closed on destruction.
class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd();

    int get() const noexcept { return fd_; }
    int release() noexcept {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    // Closes now; returns the errno of a failed close (0 on success).
    int close() noexcept;

private:
    int fd_ = -1;
};

// Opens `path` for reading (ember::Error naming the path when it cannot be opened, or is
// a directory) and returns the descriptor and the file's size.
UniqueFd open_for_reading(const std::string& path, std::size_t* size);

// Reads exactly `size` bytes at `offset` (ember::Error naming the path on an I/O error or
// when the file ends first).
void read_exact(int fd, const std::string& path, std::size_t offset, void* out,
                std::size_t size);

// A file written beside `path` under a temporary name, which commit() flushes to disk and
// renames over `path` (then fsyncs the directory): `path` holds the old or the whole new
// contents, even after a crash. Destroyed without commit() (an exception while writing),
// the temporary is removed and `path` is untouched. Python Ember's atomic_path names its
// temporaries the same way (.<name>.<host>.<pid>.<hex>.tmp); the constructor removes those
// that earlier, killed saves to `path` on this host left behind.
class AtomicFile {
public:
    explicit AtomicFile(std::string path);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    void write(const void* data, std::size_t size);
    void commit();
    const std::string& temporary_path() const noexcept { return tmp_; }

private:
    std::string path_;
    std::string dir_;
    std::string tmp_;
    UniqueFd fd_;
    bool committed_ = false;
};

// Removes the temporaries of killed saves to `path` (see AtomicFile); returns how many.
std::size_t remove_stale_temporaries(const std::string& path);

}  // namespace ember::serialize::detail
