# frozen_string_literal: true

require_relative "../client"

module Jiggler
  module Testing
    # Prepended to Client: in the fake and inline modes, the jobs an enqueue builds (checked, and through the client
    # middleware) are kept in memory or run, instead of written to the store.
    module Capture
      # Every enqueue goes through the Hash path here, so the client middleware runs as it does with a real store.
      def push(name, args_list, options, at: nil)
        return super unless Testing.enabled?
        push_jobs(build(name, args_list, options, at), batch: options)
      end

      private

      def write(jobs, batch)
        return super unless Testing.enabled?
        # what a server would read
        jobs = jobs.map { |job| Payload.load(Payload.dump(job)) }
        Testing.inline? ?
          jobs.each { |job| Runner.run(job) } :
          Testing.keep(jobs)
        jobs.map { |job| job["jid"] }
      end
    end

    Client.prepend(Capture)
  end
end
