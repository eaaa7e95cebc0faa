#include "spoke/change_batcher.h"

#include <algorithm>
#include <string>
#include <utility>

#include "hub/grpc_status.h"
#include "spoke/hub_link.h"

namespace geofs::spoke {
namespace {

using v1::Hub;

// Sends one change with its own method; its reply goes into a ChangeResult.
template <typename Req, typename Resp>
void CallAlone(HubLink* link, HubLink::AsyncMethod<Req, Resp> method, Req* req,
               Resp* (v1::ChangeResult::*reply)(), ChangeBatcher::Done done) {
  link->Call(method, std::move(*req), [reply, done = std::move(done)](Result<Resp> r, Grant) {
    if (!r.ok()) return done(r.status());
    v1::ChangeResult result;
    *(result.*reply)() = std::move(*r);
    done(std::move(result));
  });
}

// Whether `result` carries the reply type of `change`.
bool RepliesTo(const v1::Change& change, const v1::ChangeResult& result) {
  switch (change.change_case()) {
    case v1::Change::kSetAttr:
      return result.has_set_attr();
    case v1::Change::kCreate:
      return result.has_create();
    case v1::Change::kRemove:
      return result.has_remove();
    case v1::Change::kRename:
      return result.has_rename();
    case v1::Change::kLink:
      return result.has_link();
    case v1::Change::kCommitFile:
      return result.has_commit_file();
    case v1::Change::CHANGE_NOT_SET:
      break;
  }
  return false;
}

}  // namespace

ChangeBatcher::ChangeBatcher(HubLink* link, ChangeBatcherOptions options)
    : link_(link), options_(options) {}

ChangeBatcherStats ChangeBatcher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void ChangeBatcher::Submit(v1::Change change, Done done) {
  std::unique_lock lock(mu_);
  ++stats_.changes;
  if (options_.clock->Now() < alone_until_) {
    ++stats_.alone;
    lock.unlock();
    return SendAlone(Pending{std::move(change), std::move(done)});
  }
  queue_.push_back(Pending{std::move(change), std::move(done)});
  if (open_calls_ < options_.max_calls) SendBatch(lock);
}

void ChangeBatcher::SendBatch(std::unique_lock<std::mutex>& lock) {
  const size_t n = std::min(queue_.size(), static_cast<size_t>(options_.max_batch));
  std::deque<Pending> batch;
  v1::ApplyChangesRequest req;
  req.mutable_changes()->Reserve(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) {
    Pending& p = queue_.front();
    // A copy: a deferred change must be sent again.
    *req.add_changes() = p.change;
    batch.push_back(std::move(p));
    queue_.pop_front();
  }
  ++open_calls_;
  ++stats_.batches;
  lock.unlock();
  link_->Call(&Hub::Stub::async::ApplyChanges, std::move(req),
              [this, batch = std::move(batch)](Result<v1::ApplyChangesResponse> r, Grant) mutable {
                OnBatchDone(std::move(batch), std::move(r));
              });
}

void ChangeBatcher::OnBatchDone(std::deque<Pending> batch,
                                Result<v1::ApplyChangesResponse> answer) {
  // A hub without ApplyChanges: this batch, what queued behind it, and
  // every change for a while go as their own calls.
  const bool unimplemented = !answer.ok() && answer.status().code() == StatusCode::kNotSupported;
  std::deque<Pending> alone;
  {
    std::unique_lock lock(mu_);
    --open_calls_;
    if (unimplemented) {
      alone_until_ = options_.clock->Now() + options_.batch_retry;
      alone.swap(batch);
      for (Pending& p : queue_) alone.push_back(std::move(p));
      queue_.clear();
      stats_.alone += alone.size();
    } else if (!queue_.empty()) {
      // Keep the link busy first: what queued meanwhile leaves before the
      // answers are handed out.
      SendBatch(lock);
    }
  }
  for (Pending& p : alone) SendAlone(std::move(p));
  if (unimplemented) return;
  if (!answer.ok()) {
    for (Pending& p : batch) p.done(answer.status());
    return;
  }
  if (answer->results_size() != static_cast<int>(batch.size())) {
    const Status wrong =
        Status::Internal("the hub answered " + std::to_string(answer->results_size()) +
                         " of a batch of " + std::to_string(batch.size()) + " changes");
    for (Pending& p : batch) p.done(wrong);
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    v1::ChangeResult& result = *answer->mutable_results(static_cast<int>(i));
    Pending& p = batch[i];
    if (result.deferred()) {
      {
        std::lock_guard lock(mu_);
        ++stats_.deferred;
        ++stats_.alone;
      }
      SendAlone(std::move(p));
    } else if (!result.code().empty()) {
      p.done(hub::ChangeStatus(result));
    } else if (!RepliesTo(p.change, result)) {
      p.done(Status::Internal("the hub answered a change with the reply of another kind"));
    } else {
      p.done(std::move(result));
    }
  }
}

void ChangeBatcher::SendAlone(Pending p) {
  v1::Change& c = p.change;
  switch (c.change_case()) {
    case v1::Change::kSetAttr:
      return CallAlone(link_, &Hub::Stub::async::SetAttr, c.mutable_set_attr(),
                       &v1::ChangeResult::mutable_set_attr, std::move(p.done));
    case v1::Change::kCreate:
      return CallAlone(link_, &Hub::Stub::async::Create, c.mutable_create(),
                       &v1::ChangeResult::mutable_create, std::move(p.done));
    case v1::Change::kRemove:
      return CallAlone(link_, &Hub::Stub::async::Remove, c.mutable_remove(),
                       &v1::ChangeResult::mutable_remove, std::move(p.done));
    case v1::Change::kRename:
      return CallAlone(link_, &Hub::Stub::async::Rename, c.mutable_rename(),
                       &v1::ChangeResult::mutable_rename, std::move(p.done));
    case v1::Change::kLink:
      return CallAlone(link_, &Hub::Stub::async::Link, c.mutable_link(),
                       &v1::ChangeResult::mutable_link, std::move(p.done));
    case v1::Change::kCommitFile:
      return CallAlone(link_, &Hub::Stub::async::CommitFile, c.mutable_commit_file(),
                       &v1::ChangeResult::mutable_commit_file, std::move(p.done));
    case v1::Change::CHANGE_NOT_SET:
      break;
  }
  p.done(Status::InvalidArgument("a change naming no operation"));
}

}  // namespace geofs::spoke
