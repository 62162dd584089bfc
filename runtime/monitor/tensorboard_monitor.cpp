// tensorboard monitor: every event as a scalar summary in one event file per run, flushed per write.
#include <memory>

#include "runtime/monitor/monitor.h"
#include "runtime/monitor/tb_event_writer.h"

namespace zt {

namespace {

// The folder is created and probed at start-up; the event file appears with the first scalars, so
// that a run stopped at start-up leaves no file behind.
class TensorBoardMonitor final : public MonitorSink {
 public:
  explicit TensorBoardMonitor(const std::string& folder) : folder_(folder) { probe_folder(folder_); }
  void write(const std::vector<MonitorEvent>& events) override {
    if (!writer_) writer_ = std::make_unique<EventFileWriter>(folder_);
    const double now = unix_seconds();
    for (const auto& e : events) writer_->add_scalar(e.tag, float(e.value), e.x, now);
    writer_->flush();
  }
  std::string describe() const override {
    return "tensorboard -> " + (writer_ ? writer_->path() : folder_ + "/events.out.tfevents.*");
  }

 private:
  std::string folder_;
  std::unique_ptr<EventFileWriter> writer_;
};

}  // namespace

std::unique_ptr<MonitorSink> make_tensorboard_monitor(const std::string& folder) {
  return std::make_unique<TensorBoardMonitor>(folder);
}

}  // namespace zt
