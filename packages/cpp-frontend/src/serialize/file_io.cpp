#include "serialize/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <memory>
#include <random>

#include "serialize/common.h"

namespace ember::serialize::detail {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
        close();
        fd_ = other.release();
    }
    return *this;
}

UniqueFd::~UniqueFd() { close(); }

int UniqueFd::close() noexcept {
    if (fd_ < 0) return 0;
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 || errno == EINTR ? 0 : errno;  // EINTR: Linux closed it anyway
}

UniqueFd open_for_reading(const std::string& path, std::size_t* size) {
    int raw;
    do {
        raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (raw < 0 && errno == EINTR);
    if (raw < 0) fail(path, "cannot open the file: ", errno_message(errno));
    UniqueFd fd(raw);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail(path, "cannot stat the file: ", errno_message(errno));
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a checkpoint file");
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
    *size = static_cast<std::size_t>(st.st_size);
    return fd;
}

void read_exact(int fd, const std::string& path, std::size_t offset, void* out,
                std::size_t size) {
    auto* dst = static_cast<char*>(out);
    while (size > 0) {
        std::size_t chunk = size < (std::size_t(1) << 30) ? size : (std::size_t(1) << 30);
        ssize_t got = ::pread(fd, dst, chunk, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR) continue;
            fail(path, "read error: ", errno_message(errno));
        }
        if (got == 0) fail(path, "the file ended while reading it (was it truncated?)");
        dst += got;
        offset += static_cast<std::size_t>(got);
        size -= static_cast<std::size_t>(got);
    }
}

namespace {

// This machine in temporary names, as Python Ember's _host() spells it.
std::string host_tag() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
    std::string out;
    for (const char* p = name; *p && out.size() < 40; ++p) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '-';
        out += ok ? c : '-';
    }
    return out.empty() ? "host" : out;
}

void split_path(const std::string& path, std::string* dir, std::string* base) {
    auto pos = path.rfind('/');
    if (pos == std::string::npos) {
        *dir = ".";
        *base = path;
    } else {
        *dir = pos == 0 ? "/" : path.substr(0, pos);
        *base = path.substr(pos + 1);
    }
    if (base->empty() || *base == "." || *base == "..") {
        fail(path, "not a file name (the path names a directory)");
    }
}

bool pid_alive(long pid) {
    if (pid <= 0) return true;  // nothing safe to check: assume alive, remove nothing
    if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
    return errno != ESRCH;  // EPERM: it exists, under another user
}

// The pid in `entry` when it names a temporary of `base` on `host`, else -1.
long temporary_pid(const std::string& entry, const std::string& base, const std::string& host) {
    std::string prefix = "." + base + "." + host + ".";
    if (entry.compare(0, prefix.size(), prefix) != 0) return -1;
    std::size_t i = prefix.size(), start = i;
    long pid = 0;
    while (i < entry.size() && entry[i] >= '0' && entry[i] <= '9') {
        if (pid > 100000000L) return -1;
        pid = pid * 10 + (entry[i] - '0');
        ++i;
    }
    if (i == start || i >= entry.size() || entry[i] != '.') return -1;
    std::size_t hex_start = ++i;
    while (i < entry.size() && ((entry[i] >= '0' && entry[i] <= '9') ||
                                (entry[i] >= 'a' && entry[i] <= 'f'))) {
        ++i;
    }
    if (i == hex_start || entry.compare(i, std::string::npos, ".tmp") != 0) return -1;
    return pid;
}

struct DirCloser {
    void operator()(DIR* d) const noexcept { ::closedir(d); }
};

std::string random_hex(std::size_t bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::random_device rd;
    std::string out;
    for (std::size_t i = 0; i < bytes; ++i) {
        unsigned v = rd() & 0xff;
        out += kHex[v >> 4];
        out += kHex[v & 15];
    }
    return out;
}

}  // namespace

std::size_t remove_stale_temporaries(const std::string& path) {
    std::string dir, base;
    split_path(path, &dir, &base);
    std::string host = host_tag();
    std::time_t before = std::time(nullptr);
    std::unique_ptr<DIR, DirCloser> d(::opendir(dir.c_str()));
    if (!d) return 0;  // the save itself reports an unusable directory
    std::size_t removed = 0;
    while (const dirent* e = ::readdir(d.get())) {
        std::string name = e->d_name;
        long pid = temporary_pid(name, base, host);
        if (pid < 0 || pid_alive(pid)) continue;
        std::string full = dir + "/" + name;
        struct stat st {};
        if (::lstat(full.c_str(), &st) != 0 || st.st_mtime >= before) continue;
        if (::unlink(full.c_str()) == 0) ++removed;
    }
    return removed;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    std::string base;
    split_path(path_, &dir_, &base);
    remove_stale_temporaries(path_);
    std::string stem = dir_ + "/." + base + "." + host_tag() + "." +
                       std::to_string(static_cast<long>(::getpid())) + ".";
    for (;;) {
        std::string candidate = stem + random_hex(4) + ".tmp";
        int raw = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (raw >= 0) {
            tmp_ = std::move(candidate);
            fd_ = UniqueFd(raw);
            return;
        }
        if (errno == EEXIST || errno == EINTR) continue;
        fail(path_, "cannot create a temporary file in ", quoted(dir_), ": ",
             errno_message(errno));
    }
}

AtomicFile::~AtomicFile() {
    if (!committed_ && !tmp_.empty()) {
        fd_.close();
        ::unlink(tmp_.c_str());
    }
}

void AtomicFile::write(const void* data, std::size_t size) {
    const auto* src = static_cast<const char*>(data);
    while (size > 0) {
        std::size_t chunk = size < (std::size_t(1) << 30) ? size : (std::size_t(1) << 30);
        ssize_t put = ::write(fd_.get(), src, chunk);
        if (put < 0) {
            if (errno == EINTR) continue;
            fail(path_, "write error: ", errno_message(errno));
        }
        src += put;
        size -= static_cast<std::size_t>(put);
    }
}

void AtomicFile::commit() {
    if (::fsync(fd_.get()) != 0) fail(path_, "fsync failed: ", errno_message(errno));
    if (int err = fd_.close()) fail(path_, "close failed: ", errno_message(err));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
        fail(path_, "cannot replace the file: ", errno_message(errno));
    }
    committed_ = true;
    int raw = ::open(dir_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (raw >= 0) {
        UniqueFd dir_fd(raw);
        (void)::fsync(dir_fd.get());  // some filesystems refuse (EINVAL): the data is safe
    }
}

}  // namespace ember::serialize::detail
