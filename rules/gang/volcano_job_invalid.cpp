// volcano-job-invalid: a Volcano Job that Volcano's admission webhook refuses.

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// Policy events and actions the webhook lets users write (`policyEventMap` / `policyActionMap` in
// volcano `pkg/webhooks/admission/jobs/validate/util.go`), the union over the versions read, so that
// no version's valid job is refused; and the internal ones it refuses.
const std::set<std::string, std::less<>>& user_events() {
  static const std::set<std::string, std::less<>> k = {"*", "PodFailed", "PodEvicted", "PodPending",
                                                       "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"};
  return k;
}
const std::set<std::string, std::less<>>& internal_events() {
  static const std::set<std::string, std::less<>> k = {"OutOfSync", "CommandIssued", "PodRunning"};
  return k;
}
const std::set<std::string, std::less<>>& user_actions() {
  static const std::set<std::string, std::less<>> k = {"AbortJob",     "RestartJob",  "RestartTask", "RestartPod",
                                                       "RestartPartition", "TerminateJob", "CompleteJob", "ResumeJob"};
  return k;
}
const std::set<std::string, std::less<>>& internal_actions() {
  static const std::set<std::string, std::less<>> k = {"SyncJob", "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue"};
  return k;
}

std::string join(const std::set<std::string, std::less<>>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

class VolcanoJobInvalid final : public Rule {
 public:
  VolcanoJobInvalid() {
    info_.id = "volcano-job-invalid";
    info_.severity = Severity::error;
    info_.category = "gang";
    info_.seed = "9.4";
    info_.summary = "A Volcano Job that the Volcano admission webhook refuses";
    info_.rationale =
        "Volcano's validating webhook (`validatejob.volcano.sh`) checks every new `batch.volcano.sh` Job "
        "and refuses it, with all its defects in one message, when:\n\n"
        "- it has no task (`No task specified in job spec`);\n"
        "- `minAvailable` is more than the replicas of all tasks together (`job 'minAvailable' should "
        "not be greater than total replicas in tasks`), or a task's `minAvailable` is more than its "
        "`replicas` (`'minAvailable' is greater than 'replicas' in task`); negative `minAvailable`, "
        "`replicas`, `maxRetry` or `ttlSecondsAfterFinished`;\n"
        "- two tasks have the same name (`duplicated task name`), or a task name is not a DNS-1123 label;\n"
        "- a lifecycle policy (job or task) names an event twice across policies (`duplicate event ... "
        "across different policy`), an event or action users may not write (`invalid policy event`, "
        "`invalid policy action`: only `*`, PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, "
        "TaskFailed, JobUpdated and AbortJob, RestartJob, RestartTask, RestartPod, TerminateJob, "
        "CompleteJob, ResumeJob), both or neither of event and exitCode, exit code 0, an exit code "
        "twice, or `*` beside other events;\n"
        "- a plugin it does not know (`unable to find job plugin`);\n"
        "- `dependsOn` that does not form a DAG (a cycle, a task that does not exist, or a task named twice "
        "in one `dependsOn`, which Volcano's topological sort counts twice and removes once: `job has "
        "dependencies between tasks, but doesn't form a directed acyclic graph(DAG)`). Each set of tasks "
        "that depend on one another in cycles is reported once, naming a shortest cycle through its first "
        "task.\n\n"
        "`kubectl apply` then fails and the job never exists. Each defect is reported on its own line. "
        "The checks that need the cluster (the queue exists, is Open and a leaf) and the pod-template "
        "validation are left to other rules.";
    info_.remediation =
        "Correct the field the finding points at. Upstream's own examples of refused jobs are "
        "`example/invalid_jobs/*-webhook-deny.yaml` in the Volcano repository.";
    info_.checks = {KindRef{"batch.volcano.sh", "Job"}};
    info_.params = {
        ParamSpec{"knownPlugins", ParamType::string_list,
                  json::array({"ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray", "ringsconfigmap"}),
                  "job plugins the Volcano controller registers (`plugins.GetPluginBuilder`)", std::nullopt, std::nullopt},
    };
    info_.facts = {
        "facts/kubernetes-and-queues.md §2 \"vcjob rejections\" — volcano "
        "`pkg/webhooks/admission/jobs/validate/admit_job.go` (`validateJobCreate`) and `util.go` "
        "(`validatePolicies`, `topoSort`), read again in the code index (several versions): the event "
        "and action tables, the duplicate-event and exit-code checks, the `*` rule, and a `dependsOn` "
        "naming an unknown task leaving `topoSort` short, so it is refused as not a DAG. PodPending "
        "and RestartPod are allowed only in newer versions; the rule accepts them.",
        "The plugin list is the facts' `ssh, env, svc, tensorflow, mpi, pytorch, hcclrank, ray`, plus "
        "`ringsconfigmap` (a 2025 plugin in `pkg/controllers/job/plugins/ringsconfigmap`; its "
        "registration was not seen, so it is accepted rather than refused).",
        "Upstream examples: `example/invalid_jobs/{duplicatedPolicyEvent,duplicatedTaskName,minAvailable}-webhook-deny.yaml` "
        "(../shared/corpus/volcano).",
    };
    info_.example_bad = R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
spec:
  minAvailable: 5
  schedulerName: volcano
  tasks:
    - name: worker
      replicas: 4
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: train
              image: nvcr.io/nvidia/pytorch:24.06-py3
)";
    info_.example_good = R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
spec:
  minAvailable: 4
  schedulerName: volcano
  tasks:
    - name: worker
      replicas: 4
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: train
              image: nvcr.io/nvidia/pytorch:24.06-py3
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("batch.volcano.sh", "Job")) return;
    const Node spec = member(obj.root(), "spec");
    if (!spec.is_object()) return;

    auto negative = [&](Node holder, std::string_view key, const std::string& base, const std::string& webhook) {
      if (auto v = int_at(holder, key); v && *v < 0)
        ctx.report(pointer_join(base, key), std::string(key) + " " + std::to_string(*v) + " is negative; the Volcano webhook refuses the job (" + webhook + ")");
    };
    negative(spec, "minAvailable", "/spec", "job 'minAvailable' must be >= 0.");
    negative(spec, "maxRetry", "/spec", "'maxRetry' cannot be less than zero.");
    negative(spec, "ttlSecondsAfterFinished", "/spec", "'ttlSecondsAfterFinished' cannot be less than zero.");

    const Node tasks = member(spec, "tasks");
    if (!tasks.is_array() || tasks.empty()) {
      ctx.report(tasks ? "/spec/tasks" : "/spec",
                 "the job has no task; the Volcano webhook refuses it (No task specified in job spec)");
    } else {
      check_tasks(spec, tasks, ctx);
    }
    if (const Node policies = member(spec, "policies")) check_policies(policies, "/spec/policies", "the job", ctx);
    check_plugins(spec, ctx);
  }

 private:
  void check_tasks(Node spec, Node tasks, CheckContext& ctx) const {
    int64_t total = 0;
    std::unordered_map<std::string, size_t> first_of;  // task name → its first index
    bool duplicates = false;
    size_t next_index = 0;
    for (const Node t : tasks) {
      const size_t i = next_index++;
      if (!t.is_object()) continue;
      const std::string base = pointer_join("/spec/tasks", i);
      const std::string name(string_at(t, "name").value_or(""));
      const std::string label = name.empty() ? "task " + std::to_string(i) : "task \"" + name + "\"";
      const int64_t replicas = int_at(t, "replicas").value_or(0);
      if (replicas < 0)
        ctx.report(base + "/replicas", label + ": replicas " + std::to_string(replicas) +
                                           " is negative; the Volcano webhook refuses the job ('replicas' < 0 in task)");
      else
        total = sat_add(total, replicas);
      if (auto ma = int_at(t, "minAvailable")) {
        if (*ma < 0)
          ctx.report(base + "/minAvailable", label + ": minAvailable " + std::to_string(*ma) +
                                                 " is negative; the Volcano webhook refuses the job ('minAvailable' < 0 in task)");
        else if (*ma > replicas)
          ctx.report(base + "/minAvailable", label + ": minAvailable " + std::to_string(*ma) + " is more than its replicas " +
                                                 std::to_string(replicas) +
                                                 "; the Volcano webhook refuses the job ('minAvailable' is greater than 'replicas' in task: " +
                                                 name + ")");
      }
      if (!name.empty()) {  // an empty name is defaulted by the mutating webhook ("default<i>")
        if (!is_dns1123_label(name))
          ctx.report(base + "/name", "task name \"" + name +
                                         "\" is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters); "
                                         "the Volcano webhook refuses the job");
        auto [it, fresh] = first_of.emplace(name, i);
        if (!fresh) {
          duplicates = true;
          ctx.report(base + "/name", "task name \"" + name + "\" is already used by task " + std::to_string(it->second) +
                                         "; the Volcano webhook refuses the job (duplicated task name " + name + ")");
        }
      }
      if (const Node policies = member(t, "policies")) check_policies(policies, base + "/policies", label, ctx);
    }
    if (auto ma = int_at(spec, "minAvailable"); ma && *ma > total)
      ctx.report("/spec/minAvailable", "minAvailable " + std::to_string(*ma) + " is more than the " + std::to_string(total) +
                                           " replicas of all tasks together; the Volcano webhook refuses the job (job 'minAvailable' "
                                           "should not be greater than total replicas in tasks)");
    if (!duplicates) check_dependencies(tasks, first_of, ctx);
  }

  // A task name in a message: quoted, and cut at 63 bytes (a DNS-1123 label's most; a longer one
  // is reported on its own) so that a message names a few tasks in bounded space.
  static std::string quoted(const std::string& name) {
    constexpr size_t kMost = 63;
    if (name.size() <= kMost) return "\"" + name + "\"";
    size_t cut = kMost;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    return "\"" + name.substr(0, cut) + "…\"";
  }

  // Volcano's webhook sorts the tasks topologically (`topoSort` and `makeGraph` in
  // pkg/webhooks/admission/jobs/validate/util.go) and refuses the job when some task is left out:
  // one that depends on a task the job does not have (its in-degree never reaches 0), one that
  // names a task twice in its dependsOn (the in-degree counts both, the graph holds one edge, which
  // takes one off), and the tasks of a cycle. Each strongly connected component with a cycle is
  // reported once, at the dependsOn of its first task, naming a shortest cycle through that task.
  // Linear in tasks + dependencies: one iterative Tarjan pass, then a breadth-first search inside
  // each such component (each task and dependency is visited once by each).
  static void check_dependencies(Node tasks, const std::unordered_map<std::string, size_t>& index_of, CheckContext& ctx) {
    const std::string refused = "; the Volcano webhook refuses the job (job has dependencies between tasks, but doesn't form a "
                                "directed acyclic graph(DAG))";
    const size_t n = tasks.size();
    constexpr size_t kNone = SIZE_MAX;
    // deps[i]: the tasks task i depends on (indices), each once.
    std::vector<std::vector<size_t>> deps(n);
    std::vector<std::string> names(n);
    std::vector<size_t> listed_by(n, kNone);  // the last task whose dependsOn named it
    size_t next_task = 0;
    for (const Node t : tasks) {
      const size_t i = next_task++;
      if (!t.is_object()) continue;
      names[i] = std::string(string_at(t, "name").value_or(""));
      const Node on = path(t, {"dependsOn", "name"});
      if (!on.is_array()) continue;
      size_t next_dep = 0;
      for (const Node d : on) {
        const size_t k = next_dep++;
        if (!d.is_string()) continue;
        const std::string dep(d.str());
        auto it = index_of.find(dep);
        if (it == index_of.end()) {
          ctx.report(pointer_join(pointer_join("/spec/tasks", i) + "/dependsOn/name", k),
                     "task " + quoted(names[i]) + " depends on task " + quoted(dep) + ", which the job does not have" + refused);
          continue;
        }
        if (listed_by[it->second] == i) {
          ctx.report(pointer_join(pointer_join("/spec/tasks", i) + "/dependsOn/name", k),
                     "task " + quoted(names[i]) + " names task " + quoted(dep) +
                         " twice in its dependsOn (Volcano counts the dependency twice and removes it once, so the task "
                         "never becomes ready)" + refused);
          continue;
        }
        listed_by[it->second] = i;
        deps[i].push_back(it->second);
      }
    }

    // Tarjan's strongly connected components, iteratively (a long chain of tasks must not exhaust
    // the stack). comp[v]: v's component when it has a cycle (more than one task, or a task that
    // depends on itself); kNone otherwise.
    std::vector<size_t> order(n, kNone), low(n, 0), comp(n, kNone);
    std::vector<bool> on_stack(n, false);
    std::vector<size_t> stack;
    std::vector<std::pair<size_t, size_t>> frames;  // (task, next dependency to follow)
    size_t counter = 0, components = 0;
    for (size_t root = 0; root < n; ++root) {
      if (order[root] != kNone) continue;
      order[root] = low[root] = counter++;
      stack.push_back(root);
      on_stack[root] = true;
      frames.emplace_back(root, 0);
      while (!frames.empty()) {
        const size_t v = frames.back().first;
        if (frames.back().second < deps[v].size()) {
          const size_t w = deps[v][frames.back().second++];
          if (order[w] == kNone) {
            order[w] = low[w] = counter++;
            stack.push_back(w);
            on_stack[w] = true;
            frames.emplace_back(w, 0);
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], order[w]);
          }
          continue;
        }
        frames.pop_back();
        if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[v]);
        if (low[v] != order[v]) continue;
        // v is the root of a component: the tasks above it on the stack.
        size_t first_of_comp = stack.size();
        while (stack[first_of_comp - 1] != v) --first_of_comp;
        --first_of_comp;
        const bool cyclic = stack.size() - first_of_comp > 1 ||
                            std::find(deps[v].begin(), deps[v].end(), v) != deps[v].end();
        for (size_t k = first_of_comp; k < stack.size(); ++k) {
          on_stack[stack[k]] = false;
          if (cyclic) comp[stack[k]] = components;
        }
        if (cyclic) ++components;
        stack.resize(first_of_comp);
      }
    }
    if (components == 0) return;

    // Each cyclic component, at its first task (in the job's order).
    std::vector<size_t> size(components, 0);
    for (size_t v = 0; v < n; ++v)
      if (comp[v] != kNone) ++size[comp[v]];
    std::vector<bool> reported(components, false);
    std::vector<size_t> parent(n, kNone);  // the breadth-first search's, within a component
    std::vector<size_t> queue;
    std::vector<bool> in_cycle(n, false);
    for (size_t first = 0; first < n; ++first) {
      const size_t c = comp[first];
      if (c == kNone || reported[c]) continue;
      reported[c] = true;
      // A shortest cycle through `first`: breadth-first along dependencies inside the component,
      // to a task that depends on `first`.
      queue.assign(1, first);
      parent[first] = first;
      size_t last = kNone;
      for (size_t q = 0; q < queue.size() && last == kNone; ++q) {
        const size_t v = queue[q];
        for (const size_t w : deps[v]) {
          if (comp[w] != c) continue;
          if (w == first) {
            last = v;
            break;
          }
          if (parent[w] != kNone) continue;
          parent[w] = v;
          queue.push_back(w);
        }
      }
      std::vector<size_t> cycle;
      for (size_t v = last; v != first; v = parent[v]) cycle.push_back(v);
      cycle.push_back(first);
      std::reverse(cycle.begin(), cycle.end());
      for (const size_t v : cycle) in_cycle[v] = true;
      constexpr size_t kNamed = 8;
      std::string chain;
      for (size_t k = 0; k < cycle.size() && k < kNamed; ++k) chain += quoted(names[cycle[k]]) + " → ";
      if (cycle.size() > kNamed) chain += "… " + std::to_string(cycle.size() - kNamed) + " more → ";
      chain += quoted(names[first]);
      std::string message = "task dependencies form a cycle (" + chain + ", each depending on the next)";
      if (size[c] > cycle.size()) {
        std::string others;
        size_t named = 0;
        for (const size_t v : queue) {  // the component's tasks the search reached, nearest first
          if (named == kNamed) break;
          if (in_cycle[v]) continue;
          others += (named ? ", " : "") + quoted(names[v]);
          ++named;
        }
        message += ", one of the cycles among " + std::to_string(size[c]) + " tasks that depend on one another";
        if (named > 0) message += " (with " + others + (size[c] - cycle.size() > named ? " and " + std::to_string(size[c] - cycle.size() - named) + " more" : "") + ")";
      }
      for (const size_t v : queue) parent[v] = kNone;
      for (const size_t v : cycle) in_cycle[v] = false;
      ctx.report(pointer_join("/spec/tasks", first) + "/dependsOn", message + refused);
    }
  }

  static void check_policies(Node policies, const std::string& base, const std::string& owner, CheckContext& ctx) {
    if (!policies.is_array()) return;
    std::map<std::string, std::string> seen_events;  // event → pointer of its first use
    std::set<int64_t> seen_codes;
    std::string star_pointer;
    const std::string refused = "; the Volcano webhook refuses the job";
    size_t next_policy = 0;
    for (const Node p : policies) {
      const size_t j = next_policy++;
      if (!p.is_object()) continue;
      const std::string pp = pointer_join(base, j);
      // A field of the wrong type fails decoding before any of this: the schema's business.
      if (const Node e = member(p, "event"); e && !e.is_null() && !e.is_string()) continue;
      if (const Node e = member(p, "events"); e && !e.is_null() && !e.is_array()) continue;
      // The events of the policy, each with its pointer, without repeats (getEventList).
      std::vector<std::pair<std::string, std::string>> events;
      std::set<std::string> in_policy;
      auto push = [&](const std::string& e, const std::string& ptr) {
        if (!e.empty() && in_policy.insert(e).second) events.emplace_back(e, ptr);
      };
      if (const Node list = member(p, "events"); list.is_array()) {
        size_t k = 0;
        for (const Node x : list) {
          if (x.is_string()) push(std::string(x.str()), pointer_join(pp + "/events", k));
          ++k;
        }
      }
      if (auto e = string_at(p, "event")) push(std::string(*e), pp + "/event");
      const Node code = member(p, "exitCode");
      const bool has_code = code && !code.is_null();
      if (!events.empty() && has_code) {
        ctx.report(pp + "/exitCode", owner + ": a policy gives both an event and an exitCode" + refused +
                                         " (must not specify event and exitCode simultaneously)");
        continue;
      }
      if (events.empty() && !has_code) {
        ctx.report(pp, owner + ": a policy gives neither an event nor an exitCode" + refused +
                           " (either event and exitCode should be specified)");
        continue;
      }
      if (has_code) {
        auto c = as_int(code);
        if (!c) continue;
        if (*c == 0)
          ctx.report(pp + "/exitCode", owner + ": exitCode 0 means success and cannot trigger a policy" + refused +
                                           " (0 is not a valid error code)");
        else if (!seen_codes.insert(*c).second)
          ctx.report(pp + "/exitCode", owner + ": exitCode " + std::to_string(*c) + " is given by two policies" + refused +
                                           " (duplicate exitCode " + std::to_string(*c) + ")");
        continue;
      }
      for (const auto& [e, ptr] : events) {
        if (!user_events().count(e)) {
          std::string why = internal_events().count(e) ? " is an internal event users may not write" : " is not a policy event";
          ctx.report(ptr, owner + ": \"" + e + "\"" + why + refused + " (invalid policy event; valid events are " +
                              join(user_events()) + ")");
          continue;
        }
        auto [it, fresh] = seen_events.emplace(e, ptr);
        if (!fresh)
          ctx.report(ptr, owner + ": event " + e + " is already handled by another policy (" + it->second +
                              "); one event cannot have two actions" + refused + " (duplicate event " + e + " across different policy)");
        if (e == "*" && star_pointer.empty()) star_pointer = ptr;
      }
      const std::string action(string_at(p, "action").value_or(""));
      if (!user_actions().count(action)) {
        std::string why = action.empty()                    ? "the policy has no action"
                          : internal_actions().count(action) ? "\"" + action + "\" is an internal action users may not write"
                                                             : "\"" + action + "\" is not a policy action";
        ctx.report(member(p, "action") ? pp + "/action" : pp,
                   owner + ": " + why + refused + " (invalid policy action; valid actions are " + join(user_actions()) + ")");
      }
    }
    if (!star_pointer.empty() && seen_events.size() > 1)
      ctx.report(star_pointer, owner + ": a policy for every event (\"*\") sits beside policies for single events" + refused +
                                   " (if there's * here, no other policy should be here)");
  }

  void check_plugins(Node spec, CheckContext& ctx) const {
    const Node plugins = member(spec, "plugins");
    if (!plugins.is_object()) return;
    const auto& known = ctx.params().strings("knownPlugins");
    std::set<std::string> known_set(known.begin(), known.end());
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    for (const auto [key, v] : plugins.items()) {
      const std::string name(key);
      if (!known_set.count(name))
        ctx.report(pointer_join("/spec/plugins", name), "plugin \"" + name + "\" is not a Volcano job plugin (" + list +
                                                            "); the Volcano webhook refuses the job (unable to find job plugin: " +
                                                            name + ")");
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_volcano_job_invalid() { return std::make_unique<VolcanoJobInvalid>(); }

}  // namespace gpuguard::rules
