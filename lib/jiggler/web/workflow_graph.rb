# frozen_string_literal: true

module Jiggler
  class Web
    # A workflow drawn as a graph for the dashboard: steps in columns by depth (a step is one column right of its
    # deepest dependency), edges from each step to those that wait for it. A column of more than NODES_PER_COLUMN
    # steps is drawn as one node with its counts by state, so a fan-out of thousands stays readable.
    class WorkflowGraph
      NODES_PER_COLUMN = 12
      COLUMN_WIDTH = 190
      NODE_WIDTH = 170
      NODE_HEIGHT = 26
      ROW_HEIGHT = 36
      # Store::StepState's states; a column's node takes the state most of its steps are in, the later one on a tie
      # (a dead or blocked step is the one to see).
      STATES = %w[waiting released done blocked dead].freeze

      # One drawn node: a step (`jid`), or a column's steps together (`jid` nil).
      Node = Struct.new(:id, :column, :row, :jid, :counts) do
        def x = column * COLUMN_WIDTH + 10
        def y = row * ROW_HEIGHT + 10
        def height = jid ? NODE_HEIGHT : NODE_HEIGHT + 14

        # The state most of its steps are in.
        def state
          counts.max_by { |state, count| [count, STATES.index(state)] }.first
        end

        # A column's node is drawn in bands, one per state, as wide as its share of the steps.
        # @returns [Array([String, Integer, Integer])] state, x and width of each band.
        def bands
          total = counts.values.sum
          left = x
          counts.filter_map do |state, count|
            next if count.zero?
            width = (NODE_WIDTH * count.fdiv(total)).round
            band = [state, left, width]
            left += width
            band
          end
        end
      end

      attr_reader :nodes, :edges, :counts

      # @parameter steps [Hash(String, [String, Array(String)])] jid => [state, dependants], as Store#workflow_graph.
      def initialize(steps)
        @steps = steps
        @counts = STATES.to_h do |state|
          [state, steps.count { |_, (step_state, _)| step_state == state }]
        end
        columns = depths.group_by { |_, depth| depth }
          .sort
          .map { |_, pairs| pairs.map(&:first).sort }
        @node_of = {}
        @nodes = columns.each_with_index.flat_map do |jids, column|
          column_nodes(jids, column)
        end
        @edges = steps.flat_map do |jid, (_, dependants)|
          dependants.map { |dep| [@node_of[jid], @node_of[dep]] }
        end.uniq
        @edges.reject! { |from, to| from.nil? || to.nil? }
      end

      def width
        (@nodes.map(&:column).max || 0) * COLUMN_WIDTH + NODE_WIDTH + 20
      end

      def height = ((@nodes.map(&:row).max || 0) + 1) * ROW_HEIGHT + 30

      private

      def column_nodes(jids, column)
        if jids.size > NODES_PER_COLUMN
          counts = STATES.to_h do |state|
            [state, jids.count { |jid| @steps[jid].first == state }]
          end
          node = Node.new("c#{column}", column, 0, nil, counts)
          jids.each { |jid| @node_of[jid] = node }
          return [node]
        end
        jids.each_with_index.map do |jid, row|
          @node_of[jid] = Node.new(
            jid, column, row, jid, {@steps[jid].first => 1}
          )
        end
      end

      # The depth of each step: 0 for a step that waits for none, else one more than its deepest dependency
      # (Kahn's order over the dependants' lists).
      def depths
        waiting = Hash.new(0)
        @steps.each_value do |_, dependants|
          dependants.each { |dep| waiting[dep] += 1 }
        end
        depth = {}
        ready = @steps.keys.reject { |jid| waiting[jid].positive? }
        ready.each { |jid| depth[jid] = 0 }
        until ready.empty?
          jid = ready.pop
          @steps.fetch(jid, [nil, []]).last.each do |dep|
            next unless @steps.key?(dep)
            depth[dep] = [depth.fetch(dep, 0), depth[jid] + 1].max
            ready << dep if (waiting[dep] -= 1).zero?
          end
        end
        depth
      end
    end
  end
end
