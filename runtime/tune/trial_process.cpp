// ProcessTrialRunner: spawn, time out, classify by exit code, read the metrics, keep the outcome.
#include "runtime/tune/trial_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <thread>

#include "base/check.h"

namespace zt {

namespace {

using Clock = std::chrono::steady_clock;


bool write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path + ".tmp");
  f << text;
  f.close();
  return f && std::rename((path + ".tmp").c_str(), path.c_str()) == 0;
}

nlohmann::json outcome_json(const TrialOutcome& o) {
  return {{"status", trial_status_name(o.status)}, {"exit_code", o.exit_code}, {"tokens_per_s", o.tokens_per_s},
          {"step_ms", o.step_ms}, {"measured_peak_bytes", o.measured_peak_bytes},
          {"comm_bytes_per_step", o.comm_bytes_per_step}, {"comm_busy_s_per_step", o.comm_busy_s_per_step},
          {"wall_s", o.wall_s}, {"detail", o.detail}};
}

bool outcome_from_json(const nlohmann::json& j, TrialOutcome& o) {
  static const TrialStatus all[] = {TrialStatus::Ok, TrialStatus::Oom, TrialStatus::Error, TrialStatus::Timeout,
                                    TrialStatus::Skipped};
  if (!j.is_object() || !j.contains("status")) return false;
  bool known = false;
  for (TrialStatus s : all)
    if (j["status"] == trial_status_name(s)) o.status = s, known = true;
  if (!known) return false;
  o.exit_code = j.value("exit_code", 0);
  o.tokens_per_s = j.value("tokens_per_s", 0.0);
  o.step_ms = j.value("step_ms", 0.0);
  o.measured_peak_bytes = j.value("measured_peak_bytes", 0.0);
  o.comm_bytes_per_step = j.value("comm_bytes_per_step", 0.0);
  o.comm_busy_s_per_step = j.value("comm_busy_s_per_step", 0.0);
  o.wall_s = j.value("wall_s", 0.0);
  o.detail = j.value("detail", std::string());
  return true;
}

// Runs argv with stdout and stderr into `log`, in its own process group; kills the group after
// timeout_s. Returns the exit code (128 + signal when killed) and whether it timed out.
int spawn_and_wait(const std::vector<std::string>& argv, const std::string& log, double timeout_s, bool& timed_out,
                   const volatile std::sig_atomic_t* stop, int& stopped_by) {
  timed_out = false;
  stopped_by = 0;
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "zerotrain tune: cannot write the trial log %s: %s\n", log.c_str(), std::strerror(errno));
      ::_exit(126);
    }
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "zerotrain tune: cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // either side may win the race; both set the same group
  const auto start = Clock::now();
  int status = 0;
  bool term_sent = false;
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return 127;
    if (!term_sent && stop && *stop) {
      stopped_by = int(*stop);
      term_sent = true;
      timeout_s = since();  // KILL 10 s from now if TERM is not enough
      ::kill(-pid, SIGTERM);
    } else if (!term_sent && since() > timeout_s) {
      timed_out = true;
      term_sent = true;
      ::kill(-pid, SIGTERM);  // the launcher passes it on to the ranks
    } else if (term_sent && since() > timeout_s + 10) {
      ::kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (term_sent) ::kill(-pid, SIGKILL);  // anything the launcher left behind in the group
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

bool make_dirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty()) ::mkdir(cur.c_str(), 0755);
    }
    if (i < path.size()) cur += path[i];
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::access(path.c_str(), W_OK) == 0;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    bool plain = !w.empty();
    for (char c : w)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./=:,+@%").find(c) != std::string::npos))
        plain = false;
    std::string q = plain ? w : "'";
    if (!plain) {
      for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    s += (s.empty() ? "" : " ") + q;
  }
  return s;
}

std::vector<std::string> trial_command(const TrialLaunch& l, const std::string& config_path) {
  std::vector<std::string> cmd;
  bool placed = false;
  for (const auto& w : l.launcher) {
    if (w == "{np}") {
      cmd.push_back(std::to_string(l.world_size));
      placed = true;
    } else {
      cmd.push_back(w);
    }
  }
  const std::string first = l.launcher.empty() ? "" : l.launcher[0].substr(l.launcher[0].rfind('/') + 1);
  bool has_np = false;
  for (const auto& w : l.launcher) has_np = has_np || w == "-np" || w == "-n" || w == "--np" || w == "-c";
  if (!placed && !has_np && (first == "mpirun" || first == "mpiexec" || first == "orterun")) {
    cmd.push_back("-np");
    cmd.push_back(std::to_string(l.world_size));
  }
  cmd.push_back(l.zerotrain);
  cmd.push_back("--config");
  cmd.push_back(config_path);
  cmd.insert(cmd.end(), l.train_flags.begin(), l.train_flags.end());
  return cmd;
}

bool read_trial_metrics(const std::string& path, int start_profile_step, TrialOutcome& out) {
  std::ifstream f(path);
  std::string line;
  std::vector<nlohmann::json> steps;
  nlohmann::json end;
  while (std::getline(f, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;  // a line cut short by a killed run
    const std::string ev = j.value("event", "");
    if (ev == "step") steps.push_back(j);
    else if (ev == "end") end = j;
  }
  if (steps.empty()) return false;
  size_t first = 0;
  while (first + 1 < steps.size() && steps[first].value("step", int64_t(0)) < start_profile_step) ++first;
  double tokens = 0, seconds = 0, bytes = 0, busy = 0;
  for (size_t i = first; i < steps.size(); ++i) {
    const double s = steps[i].value("step_ms", 0.0) / 1e3;
    tokens += steps[i].value("tokens_per_s", 0.0) * s;
    seconds += s;
    for (const auto& [op, b] : steps[i]["comm_bytes"].items()) bytes += b.get<double>();
    busy += steps[i].value("comm_busy_s", 0.0);
  }
  const double n = double(steps.size() - first);
  out.tokens_per_s = seconds > 0 ? tokens / seconds : 0;
  out.step_ms = 1e3 * seconds / n;
  out.comm_bytes_per_step = bytes / n;
  out.comm_busy_s_per_step = busy / n;
  double peak = 0;
  for (const auto& s : steps) peak = std::max(peak, s.value("mem_peak", 0.0));
  if (end.is_object()) peak = std::max(peak, end.value("mem_peak", 0.0));
  out.measured_peak_bytes = peak;
  return true;
}

std::string first_error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line;
  while (std::getline(f, line))
    if (line.find("error") != std::string::npos || line.find("cannot run") != std::string::npos)
      return line.size() > 300 ? line.substr(0, 300) + "..." : line;
  return "";
}

TrialOutcome ProcessTrialRunner::run(const TrialSpec& t, int repeat) {
  const std::string dir = l_.exps_dir + "/" + t.name();
  const std::string k = std::to_string(repeat);
  const std::string result = dir + "/result_" + k + ".json";
  const std::string config = dir + "/ds_config.json";
  const nlohmann::json trial = trial_config(l_.base_config, t, l_.world_size);
  std::vector<std::string> cmd = trial_command(l_, config);
  // The final validation is not what is tuned: one batch of it.
  cmd.insert(cmd.end(), {"--steps", std::to_string(l_.steps), "--eval-every", "0", "--eval-batches", "1", "--metrics"});
  // What makes a kept result this trial's: the job as it would run now.
  const nlohmann::json fingerprint = {{"config", trial}, {"command", cmd}, {"steps", l_.steps},
                                      {"start_profile_step", l_.start_profile_step}, {"version", l_.version}};
  TrialOutcome o;
  if (!l_.overwrite) {
    std::ifstream f(result);
    if (f) {
      const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
      if (j.is_object() && j.value("fingerprint", nlohmann::json()) == fingerprint && outcome_from_json(j, o) &&
          (o.status == TrialStatus::Ok || o.status == TrialStatus::Oom)) {
        o.reused = true;
        return o;
      }
      o = TrialOutcome{};
    }
  }
  if (!make_dirs(dir) || !write_text(config, trial.dump(2) + "\n")) {
    o.status = TrialStatus::Error;
    o.exit_code = 126;
    o.stops_search = true;
    o.detail = "cannot write the trial's folder " + dir;
    return o;
  }
  const std::string metrics = dir + "/metrics_" + k + ".jsonl", log = dir + "/run_" + k + ".log";
  std::remove(metrics.c_str());
  cmd.push_back(metrics);
  write_text(dir + "/cmd_" + k + ".txt", shell_join(cmd) + "\n");
  const auto start = Clock::now();
  bool timed_out = false;
  int stopped_by = 0;
  o.exit_code = spawn_and_wait(cmd, log, l_.timeout_s, timed_out, l_.stop, stopped_by);
  o.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (stopped_by) throw TuneInterrupted(stopped_by);
  if (timed_out) {
    o.status = TrialStatus::Timeout;
    o.detail = "stopped at the trial timeout (" + std::to_string(int(l_.timeout_s)) + " s); log: " + log;
  } else if (o.exit_code == 0) {
    o.status = TrialStatus::Ok;
    if (!read_trial_metrics(metrics, l_.start_profile_step, o)) {
      o.status = TrialStatus::Error;
      o.detail = "exit 0 but no step record in " + metrics;
    }
  } else if (o.exit_code == kOutOfMemoryExit || o.exit_code == 128 + SIGKILL) {
    o.status = TrialStatus::Oom;
    o.detail = (o.exit_code == kOutOfMemoryExit ? "an allocation failed" : "killed by SIGKILL (the kernel's OOM killer)") +
               std::string("; log: ") + log;
  } else {
    o.status = TrialStatus::Error;
    // 2: the job refused its input; 126/127: the launcher or the log could not be used. Every
    // later trial would fail the same way.
    o.stops_search = o.exit_code == 2 || o.exit_code == 126 || o.exit_code == 127;
    const std::string why = first_error_line(log);  // shown, never used to decide the status
    o.detail = (why.empty() ? std::string() : why + "; ") + "log: " + log;
  }
  nlohmann::json j = outcome_json(o);
  j["fingerprint"] = fingerprint;
  write_text(result, j.dump(2) + "\n");
  return o;
}

}  // namespace zt
