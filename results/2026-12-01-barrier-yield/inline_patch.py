p='runtime/src/shm/shm_comm.cpp'; s=open(p).read()
old=s[s.index('void ShmComm::worker_loop() {'):s.index('c10::intrusive_ptr<c10d::Work> ShmComm::allreduce(const at::Tensor& t, ShmOp op)')]
new='''void ShmComm::execute(Task& task) {
  std::exception_ptr error = broken_;
  if (!error) {
    try {
      task.body();
    } catch (const std::exception& e) {
      const std::string cause = cause_of(e);
      error = std::make_exception_ptr(ShmError(cause));
      broken_ = error;
      if (barrier_) barrier_->abort(cause);
    }
  }
  task.body = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
  wake_.notify_all();
  static_cast<ShmWork&>(*task.work).complete(error);
}

void ShmComm::worker_loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (!queue_.empty() && !running_); });
      if (stop_) {
        const auto gone = std::make_exception_ptr(ShmError("this process is shutting down"));
        for (auto& t : queue_) static_cast<ShmWork&>(*t.work).complete(gone);
        queue_.clear();
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    execute(task);
  }
}

void ShmComm::run_queued_here() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || queue_.empty() || !running_; });
      if (stop_ || queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    execute(task);
  }
}

'''
s=s.replace(old,new)
open(p,'w').write(s)
h='runtime/src/shm/shm_comm.h'; t=open(h).read()
t=t.replace('  void worker_loop();','  void worker_loop();\n  void execute(Task& task);')
t=t.replace('  bool stop_ = false;','  bool stop_ = false;\n  bool running_ = false;')
t=t.replace('  static constexpr size_t kChunkBytes','  void run_queued_here();\n\n  static constexpr size_t kChunkBytes')
open(h,'w').write(t)
g='runtime/src/comm/grad_sync.cpp'; v=open(g).read()
v=v.replace('''  launch_ready_buckets();
  finalizing_ = false;''','''  launch_ready_buckets();
  finalizing_ = false;
  static const bool inline_run = std::getenv("XINLINE") != nullptr;
  if (region_ && inline_run) ps_.shm->run_queued_here();
  static const bool wait_yield = std::getenv("XWAITYIELD") != nullptr;
  if (wait_yield) {
    for (auto& b : buckets_) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
      while (b.work && !b.work->isCompleted() && std::chrono::steady_clock::now() < until) sched_yield();
    }
  }''')
v=v.replace('#include <algorithm>','#include <sched.h>\n\n#include <algorithm>')
open(g,'w').write(v)
