# frozen_string_literal: true

require "test_helper"
require "support/web_session"

# The dashboard's side of long jobs: a running job's progress and Cancel on the Busy page, Cancel on a waiting job's
# page, and cancelled jobs shown as such in the dead set.
describe "Jiggler::Web long jobs" do
  include WebSession

  def keys(set)
    web_store.set_entries(set).map { |job, score| "#{score}-#{jid_of(job)}" }
  end

  def register_running(jid, progress: nil)
    work = {
      "queue" => "default",
      "class" => "ImportJob",
      "jid" => jid,
      "args" => "[]",
      "run_at" => Time.now.to_f
    }
    work["progress"] = progress if progress
    info = {
      "heartbeat" => Time.now.to_f,
      "hostname" => "box",
      "pid" => "42",
      "concurrency" => "5",
      "current_jobs" => {"7|default" => work}
    }
    web_store.beat("box:42", Jiggler::Payload.dump(info), 60)
  end

  it "shows a running job's progress and message on the Busy page" do
    register_running(
      "ab" * 12,
      progress: {"fraction" => 0.42, "message" => "rows 4,200 of 10,000"}
    )
    get "/busy"
    assert_includes body, %(<progress max="1" value="0.42"></progress> 42%)
    assert_includes body, "rows 4,200 of 10,000"
  end

  it "cancels a running job from the Busy page: " \
    "the request reaches every server, by the dashboard" do
    register_running("ab" * 12)
    get "/busy"
    assert_includes body, %(action="/busy/jobs/#{"ab" * 12}/cancel")
    post_form "/busy/jobs/#{"ab" * 12}/cancel", {}, from: "/busy"
    assert_redirected_to "/busy"
    requests = web_store.cancel_requests(Time.now.to_f)
    assert_equal [["ab" * 12, "dashboard"]],
      requests.map { |request| [request.jid, request.by] }
  end

  it "cancels a scheduled job from its page: it ends in the dead set, " \
    "shown as cancelled by the dashboard" do
    job = payload(queue: "mail")
    web_store.schedule([[Time.now.to_f + 3_600, job]])
    key = keys(:scheduled).first
    get "/scheduled/#{key}"
    assert_includes body,
      %(<button name="do" value="cancel" class="danger">Cancel</button>)
    post_form "/scheduled", {"do" => "cancel", "keys" => [key]},
      from: "/scheduled/#{key}"
    assert_redirected_to "/scheduled"
    assert_equal(
      {scheduled: 0, dead: 1}, web_store.counts.slice(:scheduled, :dead)
    )
    get "/dead"
    assert_includes body,
      %(<span class="badge" data-cancelled>cancelled</span> by dashboard)
    get "/dead/#{keys(:dead).first}"
    assert_match(%r{<th>Cancelled</th><td>by dashboard, }, body)
  end

  it "cancels selected retries, and refuses to cancel dead jobs" do
    add_failed(:retry, [[1_000.0, failed], [1_001.0, failed]])
    cancelled, kept = keys(:retry)
    post_form "/retries", {"do" => "cancel", "keys" => [cancelled]},
      from: "/retries"
    assert_equal [[kept.split("-", 2).last], 1], [
      keys(:retry).map { |key| key.split("-", 2).last },
      web_store.counts[:dead]
    ]
    post_form "/dead", {"do" => "cancel", "keys" => keys(:dead)}, from: "/dead"
    assert_equal 400, last_response.status
  end
end
