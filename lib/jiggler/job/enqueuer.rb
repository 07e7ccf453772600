# frozen_string_literal: true

require_relative "../payload"

module Jiggler
  module Job
    # A job class with options fixed, as returned by `with_options`. Every enqueue form honours the options.
    class Enqueuer
      attr_reader :options

      # @parameter client [Client | Nil] the client to write through; nil: `Jiggler.client`, looked up at each enqueue.
      def initialize(job_class, options, client: nil)
        @job_class = job_class
        @options = options
        @client = client
      end

      # Returns a new enqueuer with more options applied on top of these.
      # @raises [ArgumentError] for batch_size:, batch_interval: and result_ttl:, which belong to the class (the server
      #   that performs the job reads them from it).
      def with_options(**options)
        fixed = options.keys & Options::OPTIONAL
        unless fixed.empty?
          raise ArgumentError,
            "#{fixed.join(", ")} can only be set with job_options " \
            "in #{@job_class}, not with_options"
        end
        Enqueuer.new(
          @job_class, Options.merge(@options, options), client: @client
        )
      end

      # Enqueues one job now. @returns [String] its id.
      def enqueue(*args) = push([args]).first

      # Enqueues one job per argument list; nothing is written if any list is invalid.
      # @parameter args_list [Array(Array)]
      # @returns [Array(String)] the ids, in order.
      def enqueue_bulk(args_list)
        unless args_list.is_a?(Array) && args_list.all?(Array)
          raise ArgumentError,
            "enqueue_bulk takes an Array of argument Arrays, " \
            "e.g. [[1, 2], [3, 4]]"
        end
        push(args_list)
      end

      # Enqueues one job to run after a delay. @returns [String] its id.
      def enqueue_in(seconds, *args)
        unless finite?(seconds)
          raise ArgumentError,
            "enqueue_in takes a number of seconds (got #{seconds.inspect})"
        end
        push([args], at: Time.now.to_f + seconds).first
      end

      # Enqueues one job to run at a time. @returns [String] its id.
      def enqueue_at(time, *args)
        at = time.is_a?(Time) ? time.to_f : time
        unless finite?(at)
          raise ArgumentError,
            "enqueue_at takes a Time or epoch seconds (got #{time.inspect})"
        end
        push([args], at: at.to_f).first
      end

      private

      def push(args_list, at: nil)
        name = @job_class.name or raise ArgumentError,
          "anonymous classes cannot be jobs: give #{@job_class} a name"
        if @options[:batch_size] && !@job_class.method_defined?(:perform_batch)
          raise ArgumentError,
            "#{name} sets batch_size, " \
            "so it needs a perform_batch(args_list) method"
        end
        args_list.each_with_index do |args, index|
          Payload.check_args!(
            name, args, list: (args_list.size > 1) ? index : nil
          )
        end
        return [] if args_list.empty?
        (@client || Jiggler.client).push(name, args_list, @options, at: at)
      end

      def finite?(number) = number.is_a?(Numeric) && number.to_f.finite?
    end
  end
end
