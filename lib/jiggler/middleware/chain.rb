# frozen_string_literal: true

module Jiggler
  module Middleware
    # An ordered list of middleware classes, each built once with its arguments and called around a job: the client
    # chain around every enqueue (`call(job, queue) { yield }`: change the job Hash, read context, or return without
    # yielding to stop the push), the server chain around every perform (`call(instance, job, queue) { yield }`).
    #
    #   Jiggler.configure do |config|
    #     config.server_middleware do |chain|
    #       chain.add TenantSwitch, header: "tenant"
    #       chain.insert_before TenantSwitch, RequestTagging
    #     end
    #   end
    #
    # An empty chain is never invoked: callers check `empty?` and take their plain path.
    class Chain
      Entry = Struct.new(:klass, :args, :kwargs) do
        def build = klass.new(*args, **kwargs)
      end
      private_constant :Entry

      def initialize
        @entries = []
        @built = nil
      end

      # Adds a middleware at the end of the chain (again: moved to the end with the new arguments).
      # @parameter klass [Class] built as `klass.new(*args, **kwargs)`.
      def add(klass, *args, **kwargs)
        remove(klass)
        change { @entries << Entry.new(klass, args, kwargs) }
      end

      # Adds a middleware at the start of the chain, so it runs first.
      def prepend(klass, *args, **kwargs)
        remove(klass)
        change { @entries.unshift(Entry.new(klass, args, kwargs)) }
      end

      # Adds `klass` just before `existing` (at the start when `existing` is not in the chain).
      def insert_before(existing, klass, *args, **kwargs)
        remove(klass)
        index = @entries.index { |entry| entry.klass == existing } || 0
        change { @entries.insert(index, Entry.new(klass, args, kwargs)) }
      end

      # Adds `klass` just after `existing` (at the end when `existing` is not in the chain).
      def insert_after(existing, klass, *args, **kwargs)
        remove(klass)
        index = @entries.index { |entry| entry.klass == existing } ||
          (@entries.size - 1)
        change { @entries.insert(index + 1, Entry.new(klass, args, kwargs)) }
      end

      # Takes a middleware out of the chain.
      def remove(klass)
        change { @entries.reject! { |entry| entry.klass == klass } }
      end

      # Whether the chain holds `klass`.
      def exists?(klass) = @entries.any? { |entry| entry.klass == klass }

      # The middleware classes, in the order they run.
      # @returns [Array(Class)]
      def classes = @entries.map(&:klass)

      # Whether the chain has no middleware (callers then skip it).
      def empty? = @entries.empty?

      # Removes every middleware.
      def clear = change { @entries.clear }

      # Builds each middleware now (the chain is fixed once the server runs).
      def freeze
        middlewares
        @entries.freeze
        super
      end

      # Runs `block` inside every middleware, the first added outermost.
      # @parameter args [Array] what each middleware's `call` takes before its block.
      # @returns [Object] the block's value, or nil when a middleware did not yield.
      def invoke(*args, &block) = call_from(middlewares, 0, args, &block)

      private

      # Calls the middleware at `index`, which yields to the next one, and the last to `block`.
      def call_from(list, index, args, &block)
        return yield if index == list.size
        list[index].call(*args) { call_from(list, index + 1, args, &block) }
      end

      def middlewares
        @built ||= @entries.map(&:build)
      end

      def change
        if frozen?
          raise FrozenError,
            "the middleware chain cannot change once the server has started"
        end
        yield
        @built = nil
        self
      end
    end
  end
end
