# frozen_string_literal: true

# The Active Job noop: the same body as BenchNoopJob, through the adapter, its wrapper and Active Job's execution.
class BenchNoopActiveJob < ActiveJob::Base
  def perform
    BenchDone.started
    BenchDone.finished
  end
end
