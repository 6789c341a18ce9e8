// ember::jit::load and ember::jit::Module: reading an .ember file (FORMAT.md) into a
// compiled Program with its weights, and the Module surface over it.
#include <algorithm>
#include <cstring>

#include "ember/autograd.h"
#include "ember/checkpoint.h"
#include "ember/jit.h"
#include "ember/serialize.h"
#include "jit/program.h"
#include "nn/set_data.h"
#include "serialize/common.h"

namespace ember::jit {

namespace {

using detail::Json;
using detail::Program;

constexpr const char* kFormat = "ember.export";
// "2": nested results; "2.1": scalar values (Tensor.item, operator.*), FORMAT.md "Versions"
const char* const kReads[] = {"1", "2", "2.1"};

[[noreturn]] void format_error(const std::string& what) { throw FormatError(what); }

// The checks Python's loader makes before handing the bytes to safetensors, with its
// words: a file cut short says "truncated".
Json read_header(const serialize::Buffer& data, const std::string& path) {
    const std::size_t size = data.size();
    const auto* bytes = reinterpret_cast<const char*>(data.data());
    if (size >= 4 && std::memcmp(bytes, "PK\x03\x04", 4) == 0) {
        format_error(path + " is a zip archive (a TorchScript or torch.save file), not an Ember program: Ember "
                     "cannot run TorchScript; export the model again with ember.export.export or ember.jit.trace");
    }
    if (size < 8) {
        format_error(path + " is truncated: " + std::to_string(size) +
                     " bytes, fewer than the 8 of a safetensors header length");
    }
    const uint64_t n = serialize::detail::load_le64(data.data());
    if (n > size - 8) {
        format_error(path + " is truncated: its header says " + std::to_string(n) + " bytes of JSON, but only " +
                     std::to_string(size - 8) + " bytes follow");
    }
    Json header;
    try {
        header = detail::parse_json(std::string_view(bytes + 8, static_cast<std::size_t>(n)), path);
    } catch (const Error& e) {
        format_error(path + " is not an Ember program file (its header is not JSON: " + e.what() + ")");
    }
    if (!header.is_object()) format_error(path + " is not an Ember program file (bad header)");
    uint64_t end = 0;
    for (const auto& [key, info] : header.as_object("header")) {
        if (key == "__metadata__") continue;
        const Json* offsets = info.find("data_offsets");
        if (!offsets || !offsets->is_array() || offsets->as_array(key).size() != 2 ||
            !offsets->as_array(key)[0].is_int() || !offsets->as_array(key)[1].is_int() ||
            offsets->as_array(key)[1].as_int(key) < 0) {
            format_error(path + ": tensor '" + key + "' has no valid data_offsets");
        }
        end = std::max(end, static_cast<uint64_t>(offsets->as_array(key)[1].as_int(key)));
    }
    const uint64_t have = size - 8 - n;
    if (have < end) {
        format_error(path + " is truncated: its weights need " + std::to_string(end) + " bytes, but the file holds " +
                     std::to_string(have) + " (it was cut short, e.g. by an interrupted copy)");
    }
    return header;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (std::size_t k = 0; k < shape.size(); ++k) out += (k ? ", " : "") + std::to_string(shape[k]);
    return out + "]";
}

// Attaches the file's tensors to the graph inputs that name them, checking each.
void attach_weights(Program& p, const serialize::SafetensorsFile& file, const std::string& path) {
    std::map<std::string, const serialize::TensorRecord*> records;
    for (const auto& [name, record] : file.tensors) records[name] = &record;
    for (detail::Input& in : p.inputs) {
        if (in.kind == "user_input") continue;
        auto it = records.find(in.target);
        if (it == records.end()) {
            format_error(path + ": graph input %" + in.name + " (" + in.kind + ") references the weight '" + in.target +
                         "', which is not in the file");
        }
        const serialize::TensorRecord& r = *it->second;
        bool same = r.dtype == in.dtype && r.shape.size() == in.shape.size();
        for (std::size_t d = 0; same && d < in.shape.size(); ++d) {
            same = in.shape[d].kind == detail::Dim::Kind::Static && in.shape[d].size == r.shape[d];
        }
        if (!same) {
            format_error(path + ": weight '" + in.target + "' is " + std::string(dtype_name(r.dtype)) + shape_text(r.shape) +
                         " in the file, but the graph expects " + in.meta_text);
        }
        if (p.weights.count(in.target)) continue;  // one tensor for inputs naming the same target
        Tensor t = to_tensor(r, false, path + ": weight '" + in.target + "'");
        if (in.requires_grad && t.is_floating_point()) t.requires_grad_(true);
        p.weights.emplace(in.target, t);
    }
}

}  // namespace

Module load(const std::string& path, std::optional<Device> device, ExtraFilesMap* extra_files) {
    std::shared_ptr<const serialize::Buffer> data = serialize::Buffer::read_file(path);
    const Json header = read_header(*data, path);
    const Json* meta = header.find("__metadata__");
    const Json* format = meta ? meta->find("format") : nullptr;
    if (!format || !format->is_string() || format->as_string("format") != kFormat) {
        format_error(path + " is a safetensors file but not an Ember program (its metadata has format=" +
                     (format && format->is_string() ? "'" + format->as_string("format") + "'" : std::string("None")) +
                     ", not 'ember.export'); ember::load_state_dict reads plain weights");
    }
    const Json* version = meta->find("format_version");
    const std::string found = version && version->is_string() ? "'" + version->as_string("v") + "'"
                              : version                       ? version->dump()
                                                              : "None";
    if (!version || !version->is_string() ||
        std::find_if(std::begin(kReads), std::end(kReads), [&](const char* v) { return version->as_string("v") == v; }) ==
            std::end(kReads)) {
        std::string reads;
        for (const char* v : kReads) reads += (reads.empty() ? "" : ", ") + std::string(v);
        format_error(path + " has format_version " + found + "; this Ember reads format_version " + reads +
                     ": upgrade ember-cpp to load it");
    }
    const Json* graph_text = meta->find("graph");
    Json program_json;
    try {
        program_json = detail::parse_json(graph_text && graph_text->is_string() ? graph_text->as_string("graph") : "",
                                          path + ": the program JSON");
    } catch (const FormatError&) {
        throw;
    } catch (const Error& e) {
        format_error(path + ": the program JSON is broken (" + e.what() + ")");
    }
    std::optional<std::string> device_map;
    if (device) device_map = device->str();
    std::shared_ptr<Program> program;
    try {
        program = detail::compile_program(program_json, path, device_map);
    } catch (const FormatError&) {
        throw;
    } catch (const Error& e) {
        throw FormatError(path + ": " + e.what());
    }
    serialize::SafetensorsFile file;
    try {
        file = serialize::deserialize_safetensors(data, path);
    } catch (const Error& e) {
        format_error(std::string("the weights cannot be read: ") + e.what());
    }
    attach_weights(*program, file, path);
    if (extra_files) {
        Json stored = Json::object({});
        if (const Json* extra = meta->find("extra_files"); extra && extra->is_string()) {
            stored = detail::parse_json(extra->as_string("extra_files"), path + ": extra_files");
        }
        for (auto& [key, value] : *extra_files) {
            const Json* v = stored.find(key);
            value = v && v->is_string() ? v->as_string(key) : "";
        }
    }
    return Module(std::move(program));
}

std::vector<std::string> supported_ops() {
    std::vector<std::string> out;
    for (const auto& [name, entry] : detail::op_table()) out.push_back(name);
    return out;
}

std::string op_signature(const std::string& op) {
    const auto& table = detail::op_table();
    auto it = table.find(op);
    if (it == table.end()) throw Error("ember::jit: no op named '" + op + "'");
    return it->second.signature.text();
}

// ------------------------------------------------------------------------------ Module

const Program& Module::program() const {
    if (!program_) throw Error("ember::jit::Module: no program (default-constructed; use ember::jit::load)");
    return *program_;
}

IValue Module::forward(std::vector<IValue> inputs, const Kwargs& kwargs) const {
    return detail::run(program(), std::move(inputs), kwargs);
}

namespace {
void flatten(const IValue& v, std::vector<Tensor>& out) {
    if (v.isTensor()) {
        out.push_back(v.toTensor());
    } else if (v.isTuple()) {
        for (const IValue& x : v.toTuple()->elements()) flatten(x, out);
    } else if (v.isTensorList() || v.isGenericList()) {
        for (const IValue& x : v.toList()) flatten(x, out);
    }
}
}  // namespace

std::vector<Tensor> Module::forward_tensors(const std::vector<Tensor>& inputs) const {
    std::vector<IValue> values(inputs.begin(), inputs.end());
    std::vector<Tensor> out;
    flatten(forward(std::move(values)), out);
    return out;
}

OrderedDict<std::string, Tensor> Module::named_parameters() const {
    OrderedDict<std::string, Tensor> out("Parameter");
    for (const detail::Input& in : program().inputs) {
        if (in.kind == "parameter" && !out.contains(in.target)) out.insert(in.target, program().weights.at(in.target));
    }
    return out;
}

std::vector<Tensor> Module::parameters() const { return named_parameters().values(); }

OrderedDict<std::string, Tensor> Module::named_buffers() const {
    OrderedDict<std::string, Tensor> out("Buffer");
    for (const detail::Input& in : program().inputs) {
        if (in.kind == "buffer" && !out.contains(in.target)) out.insert(in.target, program().weights.at(in.target));
    }
    return out;
}

std::vector<Tensor> Module::buffers() const { return named_buffers().values(); }

OrderedDict<std::string, Tensor> Module::state_dict() const {
    OrderedDict<std::string, Tensor> out("Key");
    for (const detail::Input& in : program().inputs) {
        const bool kept = in.kind == "parameter" || (in.kind == "buffer" && in.persistent);
        if (kept && !out.contains(in.target)) out.insert(in.target, program().weights.at(in.target));
    }
    return out;
}

void Module::to(ScalarType dtype, bool /*non_blocking*/) {
    EMBER_CHECK_TYPE(is_floating_point(dtype),
                     "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=ember.",
                     dtype_name(dtype));
    const Program& p = program();
    NoGradGuard no_grad;
    for (const detail::Input& in : p.inputs) {
        if (in.kind != "parameter" && in.kind != "buffer") continue;
        const Tensor& t = p.weights.at(in.target);
        if (t.is_floating_point() && t.scalar_type() != dtype) nn::detail::set_data_in_place(t, t.detach().to(dtype));
    }
}

void Module::to(Device device, bool /*non_blocking*/) {
    EMBER_CHECK(device.is_cpu(), "ember::jit::Module::to: Ember's C++ frontend runs on the CPU only, not on ",
                device.str());
    (void)program();  // a default-constructed Module raises, as for every other call
}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
    to(device, non_blocking);
    to(dtype, non_blocking);
}

bool Module::is_training() const { return program().training; }

void Module::train(bool on) {
    if (on == program().training) return;
    const std::string what = on ? "train()" : "eval()";
    throw NotImplementedError("Calling " + what + " is not supported yet. (The program was exported with training=" +
                              (program().training ? "True" : "False") +
                              ": its graph is fixed to that mode; export the model again after "
                              "model.train()/model.eval().)");
}

const std::string& Module::kind() const { return program().kind; }

std::vector<std::string> Module::argument_names() const {
    std::vector<std::string> out;
    for (const detail::InSpec& s : program().in_spec) out.push_back(s.name);
    return out;
}

std::vector<std::string> Module::node_ops() const {
    std::vector<std::string> out;
    for (const detail::Step& s : program().steps) out.push_back(s.op);
    return out;
}

const std::string& Module::path() const { return program().path; }

}  // namespace ember::jit
