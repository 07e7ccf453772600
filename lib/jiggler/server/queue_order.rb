# frozen_string_literal: true

module Jiggler
  module Server
    # The order in which the fetcher asks for the queues, one round trip at a time. By strict priority (`queues`): the
    # configured order, always, so a lower queue runs only while the higher ones are empty. By weight
    # (`weighted_queues`): a new order for each round trip, where each queue comes first with a chance proportional to
    # its weight, so that under load each gets its share of the jobs and none starves (a queue that is empty gives
    # its turn to the next one in that order).
    class QueueOrder
      # @parameter config [Config]
      # @parameter random [Random] the draws of the weighted order (a seeded one in tests).
      def initialize(config, random: Random.new)
        @names = config.queue_names.freeze
        @weights = config[:weighted_queues].map(&:last) if config.weighted?
        @random = random
      end

      # @returns [Array(String)] every queue worked, in no particular order of service.
      attr_reader :names

      # The queues in the order to ask for them in the next round trip.
      # @returns [Array(String)]
      def next
        return @names unless @weights && @names.size > 1
        # Weighted sampling without replacement: ordering by u ** (1 / weight), u uniform in [0, 1), puts each queue
        # first with probability weight / total weights.
        keys = @weights.map { |weight| -(@random.rand**(1.0 / weight)) }
        @names.each_index
          .sort_by { |index| keys[index] }
          .map { |index| @names[index] }
      end

      # Whether the queues are served by weight.
      def weighted? = !@weights.nil?
    end
  end
end
