# frozen_string_literal: true

require_relative "connection"
require_relative "../cancel_request"
require_relative "../../payload"

module Jiggler
  module Store
    class Redis
      # Requests to cancel running jobs (Jiggler.cancel): a sorted set of recent requests by time, so a server that
      # starts or reconnects finds them, and a channel that tells every waiting server at once.
      module Cancels
        # Seconds a request is kept: a job fetched this long after its cancel is still cancelled when it starts.
        CANCEL_RETENTION = 600

        # Records a request to cancel a job and announces it to every server.
        # @parameter jid [String]
        # @parameter by [String] who asked, as the job's final state will say.
        # @parameter now [Float] epoch seconds.
        def request_cancel(jid, by, now)
          member = Payload.dump({"jid" => jid, "by" => by})
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("ZADD", @keys.cancels, now, member)
              pipeline.call(
                "ZREMRANGEBYSCORE",
                @keys.cancels,
                "-inf",
                now - CANCEL_RETENTION
              )
              pipeline.call("PUBLISH", @keys.cancel_wake, jid)
            end
          end
        end

        # The requests made in the last CANCEL_RETENTION seconds, oldest first.
        # @returns [Array(CancelRequest)]
        def cancel_requests(now)
          rows = with do |redis|
            redis.call(
              "ZRANGEBYSCORE",
              @keys.cancels,
              now - CANCEL_RETENTION,
              "+inf",
              "WITHSCORES"
            )
          end
          rows.flatten.each_slice(2).filter_map do |member, at|
            request = Payload.parse(member)
            if request.is_a?(Hash)
              CancelRequest.new(
                jid: request["jid"],
                by: request["by"],
                at: at.to_f
              )
            end
          rescue Payload::MalformedError
            nil
          end
        end

        # Waits until a request is announced or `timeout` seconds pass.
        # @returns [Boolean] whether one may have been (true after the subscription was made again: one may have been
        #   missed meanwhile).
        # @raises [ConnectionError] when the subscription is lost.
        def wait_for_cancels(timeout)
          unless @cancel_subscription
            @cancel_subscription = subscribe_to_cancels
            return true
          end
          kind, = @cancel_subscription.next_event(timeout)
          kind == "message"
        rescue ::RedisClient::Error, IOError => error
          @cancel_subscription&.close
          @cancel_subscription = nil
          raise ConnectionError, "cancel subscription lost: #{error.message}"
        end

        # Deletes the cancel requests (part of Store::Redis#clear_all).
        def clear_cancels
          with { |redis| redis.call("DEL", @keys.cancels) }
        end

        private

        def subscribe_to_cancels
          unless @config
            raise ConnectionError, "no Redis config to subscribe with"
          end
          subscription = @config.new_client.pubsub
          subscription.call("SUBSCRIBE", @keys.cancel_wake)
          # the confirmation, not an announcement
          subscription.next_event(Connection::TIMEOUTS[:read_timeout])
          subscription
        end
      end
    end
  end
end
