// Helpers of the jit tests: the golden programs and runs that golden_jit.py writes, and the
// comparison of a program's output with Python's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/golden.h"
#include "ember/ember.h"
#include "jit/json.h"

namespace jit_test {

using ember::IValue;
using ember::Tensor;
using ember::jit::detail::Json;

inline std::string golden(const std::string& file) { return std::string(EMBER_GOLDEN_DIR) + "/" + file; }

// The programs a golden writer listed in `list_file` ("name kind runs" lines) are exactly the
// ones a test instantiates.
inline void expect_written_programs(const std::string& list_file,
                                    const std::vector<std::string>& programs) {
    std::ifstream f(golden(list_file));
    std::set<std::string> written, tested(programs.begin(), programs.end());
    std::string name, kind;
    int runs = 0;
    while (f >> name >> kind >> runs) written.insert(name);
    EXPECT_EQ(written, tested);
}
inline std::string scratch(const std::string& file) { return std::string(EMBER_TEST_BINARY_DIR) + "/" + file; }

#define EMBER_JIT_NEED_GOLDEN()                                                              \
    do {                                                                                     \
        if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files"; \
    } while (0)

// One run of a golden program: its inputs, Python's outputs (flattened), the output's
// structure and the call's keyword arguments.
struct GoldenRun {
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    Json structure;
    ember::jit::Kwargs kwargs;
};

inline std::string run_file(const std::string& program, int k) {
    return golden(program + ".run" + std::to_string(k) + ".safetensors");
}

inline GoldenRun read_run(const std::string& program, int k) {
    const std::string path = run_file(program, k);
    const ember::testing::GoldenTensors file = ember::testing::read_tensors(path);
    GoldenRun run;
    for (int i = 0; file.has("in." + std::to_string(i)); ++i) run.inputs.push_back(file.at("in." + std::to_string(i)));
    for (int j = 0; file.has("out." + std::to_string(j)); ++j) run.outputs.push_back(file.at("out." + std::to_string(j)));
    run.structure = ember::jit::detail::parse_json(file.metadata.at("structure"), path);
    Json kwargs = ember::jit::detail::parse_json(file.metadata.at("kwargs"), path);
    for (const auto& [key, value] : kwargs.as_object("kwargs")) {
        if (value.is_int()) run.kwargs.emplace(key, IValue(value.as_int(key)));
        else if (value.is_float()) run.kwargs.emplace(key, IValue(value.as_float(key)));
        else if (value.is_bool()) run.kwargs.emplace(key, IValue(value.as_bool(key)));
    }
    return run;
}

// The largest |actual - expected| over the elements, and whether every element is within
// atol + rtol * |expected| (integers and bools: exactly equal; NaN matches NaN).
struct Closeness {
    bool ok = true;
    double max_abs = 0;
    std::string detail;
};

inline Closeness compare(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-5) {
    Closeness c;
    std::ostringstream why;
    if (!actual.defined()) return {false, 0, "undefined tensor"};
    if (actual.sizes() != expected.sizes()) {
        why << "shape " << actual.sizes() << " vs " << expected.sizes();
        return {false, 0, why.str()};
    }
    if (actual.scalar_type() != expected.scalar_type()) {
        why << "dtype " << actual.scalar_type() << " vs " << expected.scalar_type();
        return {false, 0, why.str()};
    }
    const bool exact = !expected.is_floating_point();
    const Tensor a = actual.detach().to(ember::kDouble).contiguous().reshape({-1});
    const Tensor e = expected.to(ember::kDouble).contiguous().reshape({-1});
    const double* pa = a.data_ptr<double>();
    const double* pe = e.data_ptr<double>();
    for (int64_t i = 0; i < e.numel(); ++i) {
        if (std::isnan(pe[i]) && std::isnan(pa[i])) continue;
        if (std::isinf(pe[i]) && pa[i] == pe[i]) continue;
        const double d = std::abs(pa[i] - pe[i]);
        if (!(d <= c.max_abs)) c.max_abs = std::isnan(d) ? INFINITY : d;
        const bool within = exact ? pa[i] == pe[i] : d <= atol + rtol * std::abs(pe[i]);
        if (!within && c.ok) {
            c.ok = false;
            why << "element " << i << ": " << pa[i] << " vs " << pe[i];
        }
    }
    c.detail = why.str();
    return c;
}

// Walks the C++ output against Python's structure, comparing the tensors in order. Returns
// "" when everything agrees, else what differs; `max_abs` collects the largest difference.
inline std::string check_output(const IValue& out, const Json& structure, const std::vector<Tensor>& expected,
                                std::size_t& next, double& max_abs, const std::string& path = "output") {
    if (structure.is_string()) {  // "T": a tensor
        if (!out.isTensor()) return path + ": expected a Tensor, got " + out.tagKind();
        if (next >= expected.size()) return path + ": more tensors than Python's";
        Closeness c = compare(out.toTensor(), expected[next++]);
        max_abs = std::max(max_abs, c.max_abs);
        return c.ok ? "" : path + ": " + c.detail;
    }
    if (structure.is_int()) {
        if (!out.isInt() || out.toInt() != structure.as_int(path)) {
            return path + ": expected the int " + std::to_string(structure.as_int(path)) + ", got " + out.tagKind() +
                   (out.isInt() ? " " + std::to_string(out.toInt()) : "");
        }
        return "";
    }
    if (structure.is_null()) return out.isNone() ? "" : path + ": expected None, got " + out.tagKind();
    std::vector<IValue> items;
    const Json* names = structure.find("names");
    const Json* list = structure.find("items");
    std::string_view kind = names ? "names" : structure.single_key();
    if (kind == "tuple" || kind == "names") {
        if (!out.isTuple()) return path + ": expected a tuple, got " + out.tagKind();
        items = out.toTuple()->elements();
        if (names) {
            std::vector<std::string> want;
            for (const Json& n : names->as_array(path)) want.push_back(n.as_string(path));
            if (out.toTuple()->names() != want) return path + ": the tuple's names differ from Python's";
        }
    } else if (kind == "list") {
        if (!out.isList()) return path + ": expected a list, got " + out.tagKind();
        items = out.toList();
    } else {
        return path + ": unknown structure " + structure.dump();
    }
    const std::vector<Json>& parts = list ? list->as_array(path) : structure.single_value().as_array(path);
    if (items.size() != parts.size()) {
        return path + ": " + std::to_string(items.size()) + " items, Python has " + std::to_string(parts.size());
    }
    for (std::size_t k = 0; k < items.size(); ++k) {
        std::string why = check_output(items[k], parts[k], expected, next, max_abs, path + "[" + std::to_string(k) + "]");
        if (!why.empty()) return why;
    }
    return "";
}

// How a golden program's runs went: how many there were, the largest |C++ - Python|.
struct ProgramRuns {
    int runs = 0;
    double max_abs = 0;
};

// Runs the golden program `program` (<program>.ember, loaded as `m`) on the inputs of each of
// its runs (<program>.run<k>.safetensors) and expects every output tensor to be Python's
// (check_output), printing each run's largest difference; at least one run is expected.
inline ProgramRuns expect_runs_match_python(const ember::jit::Module& m, const std::string& program) {
    ProgramRuns result;
    for (int k = 0; std::ifstream(run_file(program, k)).good(); ++k) {
        GoldenRun run = read_run(program, k);
        std::vector<IValue> inputs(run.inputs.begin(), run.inputs.end());
        IValue out = m.forward(inputs, run.kwargs);
        std::size_t next = 0;
        double max_abs = 0;
        EXPECT_EQ(check_output(out, run.structure, run.outputs, next, max_abs), "") << program << " run " << k;
        EXPECT_EQ(next, run.outputs.size()) << program << " run " << k << ": fewer tensors than Python's";
        std::cout << "[jit] " << program << " run " << k;
        if (!run.inputs.empty()) std::cout << " (input " << run.inputs[0].sizes() << ")";
        std::cout << ": " << run.outputs.size() << " output tensors, max |C++ - Python| = " << max_abs << "\n";
        result.max_abs = std::max(result.max_abs, max_abs);
        ++result.runs;
    }
    EXPECT_GE(result.runs, 1) << program << ": no golden runs";
    return result;
}

// The same for <program>.ember, loaded here.
inline ProgramRuns expect_runs_match_python(const std::string& program) {
    return expect_runs_match_python(ember::jit::load(golden(program + ".ember")), program);
}

using ember::testing::error_as;  // the exception of a type and its message (common/error_of.h)

inline std::vector<std::byte> read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

inline void write_bytes(const std::string& path, const std::vector<std::byte>& bytes, std::size_t n) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
}

// A copy of a golden program with its metadata or tensors changed (safetensors rewritten).
inline std::string rewrite(const std::string& program, const std::string& out_name,
                           const std::function<void(ember::serialize::SafetensorsFile&)>& edit) {
    ember::serialize::SafetensorsFile file = ember::serialize::read_safetensors(golden(program + ".ember"));
    edit(file);
    const std::string path = scratch(out_name);
    ember::serialize::write_safetensors(path, file.tensors, file.metadata);
    return path;
}

// Replaces the first occurrence of `from` in `text` (which must hold it).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    std::size_t at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("'" + from + "' is not in the text");
    return text.replace(at, from.size(), to);
}

}  // namespace jit_test
