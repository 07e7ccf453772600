# frozen_string_literal: true

require_relative "connection"

module Jiggler
  module Store
    class Redis
      # Wakes idle servers: pushes to an empty queue and jobs scheduled sooner than the others are published on two
      # channels, which a waiting server hears on a subscription of its own.
      module Wake
        # Waits for an announcement: a job pushed to an empty queue, or a job scheduled sooner than the others.
        # @returns [Symbol | Nil] :queues, :schedule, :any (announcements may have been missed while the subscription
        #   was lost: look at both), or nil when the timeout passed.
        # @asynchronous
        def wait_for_wake(timeout)
          unless @subscription
            @subscription = subscribe
            return :any if @resubscribing
            @resubscribing = true
          end
          kind, channel, = @subscription.next_event(timeout)
          return unless kind == "message"
          (channel == @keys.schedule_wake) ? :schedule : :queues
        rescue ::RedisClient::Error, IOError => error
          @subscription&.close
          @subscription = nil
          raise ConnectionError, "subscription lost: #{error.message}"
        end

        private

        def subscribe
          unless @config
            raise ConnectionError, "no Redis config to subscribe with"
          end
          subscription = @config.new_client.pubsub
          subscription.call("SUBSCRIBE", @keys.wake, @keys.schedule_wake)
          # the confirmations, not announcements
          2.times do
            subscription.next_event(Connection::TIMEOUTS[:read_timeout])
          end
          subscription
        end
      end
    end
  end
end
