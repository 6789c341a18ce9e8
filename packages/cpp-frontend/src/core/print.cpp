// Printing: operator<< in libtorch's format (aten/src/ATen/core/Formatting.cpp) and
// ember::repr in Python Ember's (PyTorch's) repr format.
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>

#include "ember/complex.h"
#include "op_common.h"

namespace ember {

using namespace native;

// ---- libtorch's operator<< ---------------------------------------------------------------------------------
namespace {

struct FormatGuard {
    explicit FormatGuard(std::ostream& out) : out_(out), saved_(nullptr) { saved_.copyfmt(out); }
    ~FormatGuard() { out_.copyfmt(saved_); }
    FormatGuard(const FormatGuard&) = delete;
    FormatGuard& operator=(const FormatGuard&) = delete;

private:
    std::ostream& out_;
    std::ios saved_;
};

std::ios_base& defaultfloat(std::ios_base& base) {
    base.unsetf(std::ios_base::floatfield);
    return base;
}

std::pair<double, int64_t> print_format(std::ostream& stream, const double* p, int64_t size) {
    if (size == 0) return {1., 0};
    bool int_mode = true;
    for (int64_t i = 0; i < size; ++i) {
        const double z = p[i];
        if (std::isfinite(z) && z != std::ceil(z)) {
            int_mode = false;
            break;
        }
    }
    int64_t offset = 0;
    while (!std::isfinite(p[offset])) {
        offset = offset + 1;
        if (offset == size) break;
    }
    double exp_min, exp_max;
    if (offset == size) {
        exp_min = 1;
        exp_max = 1;
    } else {
        exp_min = std::fabs(p[offset]);
        exp_max = std::fabs(p[offset]);
        for (int64_t i = offset; i < size; ++i) {
            const double z = std::fabs(p[i]);
            if (std::isfinite(z)) {
                if (z < exp_min) exp_min = z;
                if (p[i] > exp_max) exp_max = z;
            }
        }
        exp_min = exp_min != 0 ? std::floor(std::log10(exp_min)) + 1 : 1;
        exp_max = exp_max != 0 ? std::floor(std::log10(exp_max)) + 1 : 1;
    }
    double scale = 1;
    int64_t sz;
    if (int_mode) {
        if (exp_max > 9) {
            sz = 11;
            stream << std::scientific << std::setprecision(4);
        } else {
            sz = static_cast<int64_t>(exp_max) + 1;
            stream << defaultfloat;
        }
    } else {
        if (exp_max - exp_min > 4) {
            sz = 11;
            if (std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99) sz = sz + 1;
            stream << std::scientific << std::setprecision(4);
        } else {
            if (exp_max > 5 || exp_max < 0) {
                sz = 7;
                scale = std::pow(10, exp_max - 1);
                stream << std::fixed << std::setprecision(4);
            } else {
                sz = exp_max == 0 ? 7 : static_cast<int64_t>(exp_max) + 6;
                stream << std::fixed << std::setprecision(4);
            }
        }
    }
    return {scale, sz};
}

void print_indent(std::ostream& stream, int64_t indent) {
    for (int64_t i = 0; i < indent; ++i) stream << " ";
}

void print_scale(std::ostream& stream, double scale) {
    FormatGuard guard(stream);
    stream << defaultfloat << scale << " *" << std::endl;
}

// t: contiguous 2-D double tensor
void print_matrix(std::ostream& stream, const Tensor& t, int64_t linesize, int64_t indent) {
    const double* data = static_cast<const double*>(t.data_ptr());
    auto [scale, sz] = print_format(stream, data, t.numel());
    print_indent(stream, indent);
    const int64_t rows = t.size(0), cols = t.size(1);
    const int64_t n_column_per_line = (linesize - indent) / (sz + 1);
    int64_t first_column = 0, last_column = -1;
    while (first_column < cols) {
        if (first_column + n_column_per_line <= cols) {
            last_column = first_column + n_column_per_line - 1;
        } else {
            last_column = cols - 1;
        }
        if (n_column_per_line < cols) {
            if (first_column != 0) stream << std::endl;
            stream << "Columns " << first_column + 1 << " to " << last_column + 1;
            print_indent(stream, indent);
        }
        if (scale != 1) {
            print_scale(stream, scale);
            print_indent(stream, indent);
        }
        for (int64_t l = 0; l < rows; ++l) {
            const double* row = data + l * cols;
            for (int64_t c = first_column; c < last_column + 1; ++c) {
                stream << std::setw(static_cast<int>(sz)) << row[c] / scale;
                if (c == last_column) {
                    stream << std::endl;
                    if (l != rows - 1) {
                        if (scale != 1) {
                            print_indent(stream, indent);
                            stream << " ";
                        } else {
                            print_indent(stream, indent);
                        }
                    }
                } else {
                    stream << " ";
                }
            }
        }
        first_column = last_column + 1;
    }
}

void print_tensor_nd(std::ostream& stream, const Tensor& self, int64_t linesize) {
    const int64_t nd = self.dim();
    std::vector<int64_t> counter(static_cast<size_t>(nd - 2), 0);
    bool start = true;
    bool finished = false;
    counter[0] = -1;
    while (true) {
        for (int64_t i = 0; nd - 2; ++i) {
            counter[static_cast<size_t>(i)] = counter[static_cast<size_t>(i)] + 1;
            if (counter[static_cast<size_t>(i)] >= self.size(i)) {
                if (i == nd - 3) {
                    finished = true;
                    break;
                }
                counter[static_cast<size_t>(i)] = 0;
            } else {
                break;
            }
        }
        if (finished) break;
        if (start) {
            start = false;
        } else {
            stream << std::endl;
        }
        stream << "(";
        Tensor t = self;
        for (int64_t i = 0; i < nd - 2; ++i) {
            t = t.select(0, counter[static_cast<size_t>(i)]);
            stream << counter[static_cast<size_t>(i)] + 1 << ",";
        }
        stream << ".,.) = " << std::endl;
        print_matrix(stream, contiguous_data(t), linesize, 1);
    }
}

}  // namespace

std::ostream& operator<<(std::ostream& stream, const Tensor& tensor_) {
    FormatGuard guard(stream);
    if (!tensor_.defined()) {
        stream << "[ Tensor (undefined) ]";
        return stream;
    }
    NoGradGuard no_grad;
    // a complex tensor prints its real view (..., 2): real and imaginary parts side by side
    const Tensor t = contiguous_data(cast(tensor_.is_complex() ? view_as_real(tensor_) : tensor_, kDouble));
    const std::string type = tensor_.toString();
    if (t.dim() == 0) {
        stream << defaultfloat << *static_cast<const double*>(t.data_ptr()) << std::endl;
    } else if (t.dim() == 1) {
        if (t.numel() > 0) {
            const double* p = static_cast<const double*>(t.data_ptr());
            auto [scale, sz] = print_format(stream, p, t.numel());
            if (scale != 1) print_scale(stream, scale);
            for (int64_t i = 0; i < t.size(0); ++i) stream << std::setw(static_cast<int>(sz)) << p[i] / scale << std::endl;
        }
    } else if (t.dim() == 2) {
        if (t.numel() > 0) print_matrix(stream, t, 80, 0);
    } else {
        if (t.numel() > 0) print_tensor_nd(stream, t, 80);
    }
    stream << "[ " << type << "{";
    for (int64_t i = 0; i < tensor_.dim(); ++i) stream << (i ? "," : "") << tensor_.size(i);
    stream << "} ]";
    return stream;
}

// ---- Python's repr ---------------------------------------------------------------------------------------
namespace {

std::mutex g_print_mutex;
PrintOptions g_print_options;

PrintOptions current_options() {
    std::lock_guard<std::mutex> lock(g_print_mutex);
    return g_print_options;
}

std::string fmt(const char* f, double v, int width, int precision) {
    char buf[512];
    std::snprintf(buf, sizeof buf, f, width, precision, v);
    return buf;
}

std::string py_special(double v) {
    if (std::isnan(v)) return "nan";
    return v > 0 ? "inf" : "-inf";
}

// Python's f"{v:.{p}f}"
std::string py_fixed(double v, int p) { return std::isfinite(v) ? fmt("%*.*f", v, 0, p) : py_special(v); }
// Python's f"{v:{w}.{p}e}"
std::string py_sci(double v, int w, int p) {
    if (std::isfinite(v)) return fmt("%*.*e", v, w, p);
    std::string s = py_special(v);
    while (static_cast<int>(s.size()) < w) s = " " + s;
    return s;
}

struct Formatter {
    bool floating = false;
    bool is_bool = false;
    bool int_mode = true;
    bool sci_mode = false;
    size_t max_width = 1;
    int precision = 4;

    Formatter(const std::vector<double>& values, bool is_float, bool boolean, const PrintOptions& opts)
        : floating(is_float), is_bool(boolean), precision(opts.precision) {
        if (!floating) {
            for (double v : values) max_width = std::max(max_width, format_plain(v).size());
            return;
        }
        std::vector<double> nz;
        for (double v : values) {
            if (std::isfinite(v) && v != 0) nz.push_back(v);
        }
        if (nz.empty()) return;
        double lo = std::fabs(nz[0]), hi = lo;
        for (double v : nz) {
            lo = std::min(lo, std::fabs(v));
            hi = std::max(hi, std::fabs(v));
            if (v != std::ceil(v)) int_mode = false;
        }
        sci_mode = opts.sci_mode ? *opts.sci_mode : (hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4);
        for (double v : nz) {
            std::string s;
            if (sci_mode) s = py_sci(v, 0, precision);
            else if (int_mode) s = py_fixed(v, 0) + ".";
            else s = py_fixed(v, precision);
            max_width = std::max(max_width, s.size());
        }
    }

    std::string format_plain(double v) const {
        if (is_bool) return v != 0 ? "True" : "False";
        std::ostringstream os;
        os << static_cast<int64_t>(v);
        return os.str();
    }

    std::string format(double v) const {
        std::string r;
        if (floating) {
            if (sci_mode) {
                r = py_sci(v, static_cast<int>(max_width), precision);
            } else if (int_mode) {
                r = py_fixed(v, 0);
                if (std::isfinite(v)) r += ".";
            } else {
                r = py_fixed(v, precision);
            }
        } else {
            r = format_plain(v);
        }
        if (r.size() < max_width) r = std::string(max_width - r.size(), ' ') + r;
        return r;
    }
};

// A host copy of the elements as doubles (int64 values above 2^53 lose precision; printed via int64).
struct HostArray {
    std::vector<double> data;
    std::vector<double> imag;      // a complex tensor's imaginary parts (data: the real parts)
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;  // contiguous
    double at(int64_t off) const { return data[static_cast<size_t>(off)]; }
};

// Formats the element at an offset: one formatter, or (complex) one for the real parts and
// one for the imaginary parts, as Python's "1.5000-2.0000j".
struct ElementFormat {
    const HostArray& a;
    const Formatter& re;
    const Formatter* im = nullptr;

    std::string operator()(int64_t off) const {
        if (im == nullptr) return re.format(a.at(off));
        std::string i = im->format(a.imag[static_cast<size_t>(off)]) + "j";
        i.erase(0, i.find_first_not_of(' '));
        const std::string r = re.format(a.at(off));
        return i[0] == '+' || i[0] == '-' ? r + i : r + "+" + i;
    }
    size_t width() const { return re.max_width + (im != nullptr ? im->max_width + 1 : 0); }
};

void collect_summary(const HostArray& a, int64_t dim, int64_t off, bool summarize, int edge, std::vector<double>& out) {
    if (dim == static_cast<int64_t>(a.shape.size())) {
        out.push_back(a.at(off));
        return;
    }
    const int64_t n = a.shape[static_cast<size_t>(dim)];
    const int64_t st = a.strides[static_cast<size_t>(dim)];
    if (summarize && n > 2 * edge) {
        for (int64_t i = 0; i < edge; ++i) collect_summary(a, dim + 1, off + i * st, summarize, edge, out);
        for (int64_t i = n - edge; i < n; ++i) collect_summary(a, dim + 1, off + i * st, summarize, edge, out);
    } else {
        for (int64_t i = 0; i < n; ++i) collect_summary(a, dim + 1, off + i * st, summarize, edge, out);
    }
}

std::string vector_str(const HostArray& a, int64_t off, int64_t indent, bool summarize, const ElementFormat& f,
                       const PrintOptions& o) {
    const size_t element_length = f.width() + 2;
    const int64_t per_line =
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(o.linewidth - indent) / static_cast<double>(element_length))));
    const int64_t n = a.shape.back();
    const int64_t st = a.strides.back();
    std::vector<std::string> data;
    const int edge = o.edgeitems;
    if (summarize && edge == 0) {
        data.push_back("...");
    } else if (summarize && n > 2 * edge) {
        for (int64_t i = 0; i < edge; ++i) data.push_back(f(off + i * st));
        data.push_back(" ...");
        for (int64_t i = n - edge; i < n; ++i) data.push_back(f(off + i * st));
    } else {
        for (int64_t i = 0; i < n; ++i) data.push_back(f(off + i * st));
    }
    std::string out = "[";
    const std::string sep = ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
    for (size_t i = 0; i < data.size(); i += static_cast<size_t>(per_line)) {
        if (i) out += sep;
        for (size_t j = i; j < std::min(data.size(), i + static_cast<size_t>(per_line)); ++j) {
            if (j > i) out += ", ";
            out += data[j];
        }
    }
    return out + "]";
}

std::string str_with_formatter(const HostArray& a, int64_t dim, int64_t off, int64_t indent, bool summarize,
                               const ElementFormat& f, const PrintOptions& o) {
    const int64_t nd = static_cast<int64_t>(a.shape.size()) - dim;
    if (nd == 0) return f(off);
    if (nd == 1) {
        return vector_str(a, off, indent, summarize, f, o);
    }
    const int64_t n = a.shape[static_cast<size_t>(dim)];
    const int64_t st = a.strides[static_cast<size_t>(dim)];
    const int edge = o.edgeitems;
    std::vector<std::string> slices;
    if (summarize && n > 2 * edge) {
        for (int64_t i = 0; i < edge; ++i) slices.push_back(str_with_formatter(a, dim + 1, off + i * st, indent + 1, summarize, f, o));
        slices.push_back("...");
        for (int64_t i = n - edge; i < n; ++i) slices.push_back(str_with_formatter(a, dim + 1, off + i * st, indent + 1, summarize, f, o));
    } else {
        for (int64_t i = 0; i < n; ++i) slices.push_back(str_with_formatter(a, dim + 1, off + i * st, indent + 1, summarize, f, o));
    }
    const std::string sep = "," + std::string(static_cast<size_t>(nd - 1), '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
    std::string out = "[";
    for (size_t i = 0; i < slices.size(); ++i) {
        if (i) out += sep;
        out += slices[i];
    }
    return out + "]";
}

std::string tuple_str(IntArrayRef s) {
    std::ostringstream os;
    os << "(";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) os << ", ";
        os << s[i];
    }
    if (s.size() == 1) os << ",";
    os << ")";
    return os.str();
}

}  // namespace

void set_printoptions(const PrintOptions& options) {
    std::lock_guard<std::mutex> lock(g_print_mutex);
    g_print_options = options;
}

PrintOptions get_printoptions() { return current_options(); }

std::string repr(const Tensor& t) {
    if (!t.defined()) return "None";
    const PrintOptions o = current_options();
    const std::string prefix = "tensor(";
    const int64_t indent = static_cast<int64_t>(prefix.size());
    std::vector<std::string> suffixes;
    const ScalarType dt = t.scalar_type();
    const std::string dtype_suffix = "dtype=ember." + std::string(dtype_name(dt));
    std::string body;
    if (t.numel() == 0) {
        if (t.dim() != 1) suffixes.push_back("size=" + tuple_str(t.sizes()));
        if (dt != get_default_dtype()) suffixes.push_back(dtype_suffix);
        body = "[]";
    } else {
        if (o.edgeitems == 0) suffixes.push_back("size=" + tuple_str(t.sizes()));
        // PyTorch leaves out the default dtype, its complex counterpart, int64 and bool
        if (dt != get_default_dtype() && dt != to_complex_type(get_default_dtype()) && dt != kLong && dt != kBool) {
            suffixes.push_back(dtype_suffix);
        }
        HostArray a;
        {
            NoGradGuard g;
            const Tensor c = contiguous_data(cast(t.is_complex() ? real(t) : t, kDouble));
            const double* p = static_cast<const double*>(c.data_ptr());
            a.data.assign(p, p + c.numel());
            if (t.is_complex()) {
                const Tensor ci = contiguous_data(cast(imag(t), kDouble));
                const double* q = static_cast<const double*>(ci.data_ptr());
                a.imag.assign(q, q + ci.numel());
            }
            if (dt == kLong) {
                // exact int64 values for printing
                const Tensor ci = contiguous_data(t);
                const int64_t* ip = static_cast<const int64_t*>(ci.data_ptr());
                for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<double>(ip[i]);
            }
        }
        a.shape = t.sizes().vec();
        a.strides = contiguous_strides(a.shape);
        const bool summarize = static_cast<double>(t.numel()) > o.threshold;
        std::vector<double> shown;
        collect_summary(a, 0, 0, summarize, o.edgeitems, shown);
        const bool floating = t.is_floating_point() || t.is_complex();
        const Formatter f(summarize ? shown : a.data, floating, dt == kBool, o);
        if (t.is_complex()) {
            HostArray im = a;
            im.data = a.imag;
            std::vector<double> shown_im;
            collect_summary(im, 0, 0, summarize, o.edgeitems, shown_im);
            const Formatter fi(summarize ? shown_im : a.imag, true, false, o);
            body = str_with_formatter(a, 0, 0, indent, summarize, ElementFormat{a, f, &fi}, o);
        } else {
            body = str_with_formatter(a, 0, 0, indent, summarize, ElementFormat{a, f, nullptr}, o);
        }
    }
    if (t.grad_fn()) {
        suffixes.push_back("grad_fn=<" + t.grad_fn()->name() + ">");
    } else if (t.requires_grad()) {
        suffixes.push_back("requires_grad=True");
    }
    std::string out = prefix + body;
    const size_t nl = out.rfind('\n');
    int64_t last_line_len = static_cast<int64_t>(out.size()) - (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
    for (const std::string& s : suffixes) {
        if (last_line_len + static_cast<int64_t>(s.size()) + 2 > o.linewidth) {
            out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + s;
            last_line_len = indent + static_cast<int64_t>(s.size());
        } else {
            out += ", " + s;
            last_line_len += static_cast<int64_t>(s.size()) + 2;
        }
    }
    return out + ")";
}

}  // namespace ember
