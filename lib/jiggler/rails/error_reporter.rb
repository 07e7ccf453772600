# frozen_string_literal: true

module Jiggler
  module Rails
    # The error handler a Rails app gets by default: reports every failure to `Rails.error` (and so to Sentry,
    # Honeybadger, Bugsnag or any subscriber), unhandled, with the job as context. Rails reports an error once, so
    # one already reported (by the job itself, say) is not reported again.
    class ErrorReporter
      # Reports one failure, as every error handler is called.
      def call(error, context)
        job = context[:job]
        details = {
          "class" => job["name"],
          "jid" => job["jid"],
          "queue" => context[:queue],
          "attempt" => job["attempt"]
        }
        ::Rails.error.report(
          error, handled: false, source: "jiggler", context: {jiggler: details}
        )
      end
    end
  end
end
