# frozen_string_literal: true

# A plain jiggler job that records how it runs: the environment, whether the app's executor wraps it, whether code
# reloads, and whether the app was eager-loaded (BulkJob is loaded though no job of it ran here). The reload test
# rewrites VERSION.
class ProbeJob
  include Jiggler::Job

  VERSION = 1

  def perform(note)
    app = Rails.application
    details = [
      Rails.env,
      app.executor.active?,
      app.config.reloading_enabled?,
      Object.autoload?(:BulkJob).nil?,
      VERSION
    ]
    Event.create!(kind: "probe", note: "#{note} #{details.join(" ")}")
  end
end
