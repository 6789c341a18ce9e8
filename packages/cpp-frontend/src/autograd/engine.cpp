// The backward engine: runs the graph from the roots in dependency order (each node once,
// when all its input gradients have arrived; among ready nodes the most recently created
// first, as PyTorch), on the calling thread.
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "../core/tensor_utils.h"
#include "accumulate_grad.h"
#include "ember/autograd.h"
#include "ember/ops.h"

namespace ember {
namespace autograd {

namespace {

struct ReadyEntry {
    uint64_t seq;
    Node* node;
    bool operator<(const ReadyEntry& o) const { return seq < o.seq; }  // max-heap on seq
};

bool is_expandable_to(IntArrayRef shape, IntArrayRef desired) {
    if (shape.size() > desired.size()) return false;
    const size_t off = desired.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] != desired[off + i] && shape[i] != 1) return false;
    }
    return true;
}

// Checks (and fixes: sums broadcast dims, casts the dtype) the gradients a node returned.
void validate_outputs(Node& node, variable_list& grads) {
    const edge_list& edges = node.next_edges();
    if (grads.size() != edges.size()) {
        EMBER_ERROR("function ", node.name(), " returned an incorrect number of gradients (expected ",
                    edges.size(), ", got ", grads.size(), ")");
    }
    for (size_t i = 0; i < grads.size(); ++i) {
        const Edge& e = edges[i];
        Tensor& g = grads[i];
        if (!e.is_valid()) {
            g.reset();
            continue;
        }
        if (!g.defined()) continue;
        const InputMetadata& meta = e.function->input_metadata(e.input_nr);
        if (!(g.sizes() == IntArrayRef(meta.shape))) {
            if (!is_expandable_to(meta.shape, g.sizes())) {
                EMBER_ERROR("Function ", node.name(), " returned an invalid gradient at index ", i, " - got ",
                            g.sizes(), " but expected shape compatible with ", IntArrayRef(meta.shape));
            }
            g = sum_to(g, meta.shape);
        }
        if (g.scalar_type() != meta.dtype) g = g.to(meta.dtype);
    }
}

struct GraphTask {
    bool keep_graph = false;
    bool create_graph = false;
    std::unordered_map<Node*, int> dependencies;
    std::unordered_map<Node*, variable_list> buffers;
    // grad(): where to capture the gradients of the inputs
    bool capture_mode = false;
    std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, slot)
    std::unordered_set<Node*> needed;  // nodes to execute in capture mode
    variable_list captured;
};

void add_to_buffer(GraphTask& task, Node* fn, uint32_t input_nr, Tensor grad) {
    variable_list& buf = task.buffers[fn];
    if (buf.size() < fn->num_inputs()) buf.resize(fn->num_inputs());
    if (buf.size() <= input_nr) buf.resize(input_nr + 1);
    Tensor& slot = buf[input_nr];
    if (!slot.defined()) {
        slot = std::move(grad);
    } else if (grad.defined()) {
        slot = slot + grad;
    }
}

void compute_dependencies(GraphTask& task, const std::vector<Node*>& roots) {
    std::vector<Node*> stack;
    std::unordered_set<Node*> seen;
    for (Node* r : roots) {
        if (seen.insert(r).second) stack.push_back(r);
    }
    while (!stack.empty()) {
        Node* fn = stack.back();
        stack.pop_back();
        for (const Edge& e : fn->next_edges()) {
            Node* next = e.function.get();
            if (!next) continue;
            task.dependencies[next] += 1;
            if (seen.insert(next).second) stack.push_back(next);
        }
    }
}

// Marks the nodes from which a captured node is reachable (they must run).
void compute_needed(GraphTask& task, const std::vector<Node*>& roots) {
    std::unordered_map<Node*, int> state;  // 0 unvisited, 1 in progress, 2 done
    std::unordered_map<Node*, bool> result;
    // iterative post-order DFS
    struct Frame {
        Node* node;
        size_t next;
    };
    for (Node* root : roots) {
        if (state[root] == 2) continue;
        std::vector<Frame> stack{{root, 0}};
        state[root] = 1;
        while (!stack.empty()) {
            Frame& f = stack.back();
            const edge_list& edges = f.node->next_edges();
            if (f.next < edges.size()) {
                Node* child = edges[f.next++].function.get();
                if (child && state[child] == 0) {
                    state[child] = 1;
                    stack.push_back({child, 0});
                }
                continue;
            }
            bool need = false;
            for (const Edge& e : edges) {
                Node* child = e.function.get();
                if (!child) continue;
                if (task.captures.count(child) || result[child]) need = true;
            }
            result[f.node] = need;
            if (need) task.needed.insert(f.node);
            state[f.node] = 2;
            stack.pop_back();
        }
    }
}

void execute(GraphTask& task, const std::vector<std::pair<Edge, Tensor>>& roots) {
    std::vector<Node*> root_nodes;
    for (const auto& [edge, grad] : roots) root_nodes.push_back(edge.function.get());
    compute_dependencies(task, root_nodes);
    if (task.capture_mode) compute_needed(task, root_nodes);
    for (const auto& [edge, grad] : roots) add_to_buffer(task, edge.function.get(), edge.input_nr, grad);

    std::priority_queue<ReadyEntry> ready;
    std::unordered_set<Node*> queued;
    for (Node* r : root_nodes) {
        if (task.dependencies[r] == 0 && queued.insert(r).second) ready.push({r->sequence_nr(), r});
    }
    AutoGradMode grad_mode(task.create_graph);
    while (!ready.empty()) {
        Node* fn = ready.top().node;
        ready.pop();
        variable_list inputs;
        auto it = task.buffers.find(fn);
        if (it != task.buffers.end()) {
            inputs = std::move(it->second);
            task.buffers.erase(it);
        }
        if (inputs.size() < fn->num_inputs()) inputs.resize(fn->num_inputs());
        inputs = fn->call_tensor_pre_hooks(std::move(inputs));

        if (task.capture_mode) {
            auto c = task.captures.find(fn);
            if (c != task.captures.end()) {
                for (const auto& [input_nr, slot] : c->second) {
                    if (input_nr < inputs.size()) task.captured[slot] = inputs[input_nr];
                }
            }
            if (!task.needed.count(fn)) continue;
        }

        bool any_defined = false;
        for (const Tensor& g : inputs) any_defined = any_defined || g.defined();
        variable_list outputs;
        if (any_defined) {
            variable_list hook_inputs;
            if (fn->has_post_hooks()) hook_inputs = inputs;
            outputs = fn->apply(std::move(inputs));
            validate_outputs(*fn, outputs);
            if (fn->has_post_hooks()) fn->call_post_hooks(outputs, hook_inputs);
        } else {
            outputs.resize(fn->num_outputs());
        }
        if (!task.keep_graph) fn->release_variables();

        const edge_list& edges = fn->next_edges();
        for (size_t i = 0; i < edges.size(); ++i) {
            const Edge& e = edges[i];
            Node* next = e.function.get();
            if (!next) continue;
            if (task.capture_mode && !task.needed.count(next) && !task.captures.count(next)) continue;
            add_to_buffer(task, next, e.input_nr, i < outputs.size() ? std::move(outputs[i]) : Tensor());
            int& deps = task.dependencies[next];
            if (--deps == 0 && queued.insert(next).second) ready.push({next->sequence_nr(), next});
        }
    }
}

std::vector<std::pair<Edge, Tensor>> make_roots(const variable_list& tensors, const variable_list& grad_tensors) {
    EMBER_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(), "got ", grad_tensors.size(),
                " tensors and ", tensors.size(), " gradients");
    std::vector<std::pair<Edge, Tensor>> roots;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        EMBER_CHECK(t.defined() && t.requires_grad(), "element ", i,
                    " of tensors does not require grad and does not have a grad_fn");
        Tensor g = grad_tensors.empty() ? Tensor() : grad_tensors[i];
        if (!g.defined()) {
            EMBER_CHECK(t.numel() == 1, "grad can be implicitly created only for scalar outputs");
            EMBER_CHECK(t.is_floating_point(), "grad can be implicitly created only for real scalar outputs but got ",
                        t.scalar_type());
            g = ones_like(t);
        } else {
            EMBER_CHECK(g.sizes() == t.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ", g.sizes(),
                        " and output[", i, "] has a shape of ", t.sizes(), ".");
            if (g.scalar_type() != t.scalar_type() && t.is_floating_point()) g = g.to(t.scalar_type());
        }
        roots.emplace_back(gradient_edge(t), std::move(g));
    }
    return roots;
}

// Runs the graph; returns the captured gradients of `inputs` (capture mode) or nothing.
variable_list run_backward(const variable_list& tensors, const variable_list& grad_tensors, bool keep_graph,
                           bool create_graph, const variable_list& inputs) {
    GraphTask task;
    task.keep_graph = keep_graph;
    task.create_graph = create_graph;
    auto roots = make_roots(tensors, grad_tensors);
    if (!inputs.empty()) {
        task.capture_mode = true;
        task.captured.resize(inputs.size());
        // holds the capture nodes (e.g. a leaf's AccumulateGrad) alive while running
        std::vector<Edge> keep;
        for (const Tensor& t : inputs) keep.push_back(gradient_edge(t));
        for (size_t i = 0; i < keep.size(); ++i) {
            if (keep[i].is_valid()) task.captures[keep[i].function.get()].emplace_back(keep[i].input_nr, i);
        }
        execute(task, roots);
        return std::move(task.captured);
    }
    execute(task, roots);
    return {};
}

}  // namespace

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs) {
    const bool keep_graph = retain_graph.value_or(create_graph);
    if (inputs.empty()) {
        run_backward(tensors, grad_tensors, keep_graph, create_graph, {});
        return;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        EMBER_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "One of the differentiated Tensors does not require grad");
    }
    variable_list grads = run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs);
    AutoGradMode mode(create_graph);
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (grads[i].defined()) AccumulateGrad::accumulate(inputs[i], grads[i]);
    }
}

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
    for (const Tensor& t : inputs) {
        EMBER_CHECK(t.defined() && t.requires_grad(), "One of the differentiated Tensors does not require grad");
    }
    const bool keep_graph = retain_graph.value_or(create_graph);
    EMBER_CHECK(!inputs.empty(), "grad requires non-empty inputs.");
    variable_list result = run_backward(outputs, grad_outputs, keep_graph, create_graph, inputs);
    for (size_t i = 0; i < result.size(); ++i) {
        if (!result[i].defined()) {
            EMBER_CHECK(allow_unused, "The differentiated Tensor at index ", i,
                        " appears to not have been used in the graph. Set allow_unused=True if this is the "
                        "desired behavior.");
        } else if (!create_graph) {
            result[i] = result[i].detach();
        }
    }
    return result;
}

}  // namespace autograd
}  // namespace ember
