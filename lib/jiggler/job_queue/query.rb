# frozen_string_literal: true

require_relative "state"

module Jiggler
  class JobQueue
    # A `poll` query turned into SQL: `state:` compares the job's state as JSON; any other key names a top-level
    # payload field that must equal the value, of the same JSON type: a String matches a string field, a number a
    # number, true and false a boolean, nil a null or missing field, and an Array an array field equal to it.
    module Query
      ACCEPTED = "a Hash of state: and payload fields " \
        "({state: \"new\", \"kind\" => \"email\"}), or nil for any job"
      VALUES = "nil, true, false, a number, a String, a Symbol " \
        "or an Array of these"
      # The JSON types json_type gives a field that a value of each kind may equal.
      TYPES = {
        String => "'text'",
        Symbol => "'text'",
        Integer => "'integer', 'real'",
        Float => "'integer', 'real'",
        TrueClass => "'true'",
        FalseClass => "'false'",
        Array => "'array'"
      }.freeze
      private_constant :TYPES

      module_function

      # @parameter query [Hash | Nil]
      # @returns [Array(String, Array)] the SQL condition and the values for its placeholders.
      # @raises [ArgumentError] for a query that is neither a Hash nor nil, a field name that is not a plain word, or
      #   a field value that is not one of VALUES.
      def conditions(query)
        unless query.nil? || query.is_a?(Hash)
          raise ArgumentError,
            "poll's query must be #{ACCEPTED} (got #{query.inspect})"
        end
        clauses = []
        values = []
        query&.each do |key, value|
          clause, value = condition(key, value)
          clauses << clause
          values << value unless value.nil?
        end
        [clauses.empty? ? "1" : clauses.join(" AND "), values]
      end

      # @returns [Array(String, Object)] the clause and the value for its placeholder (nil: none).
      def condition(key, value)
        if key.to_s == "state"
          state = State.dump(value)
          return state.nil? ? ["state IS NULL", nil] : ["state = ?", state]
        end
        path = path_for(key)
        return ["json_extract(payload, '#{path}') IS NULL", nil] if value.nil?
        check_value(key, value)
        [
          "json_type(payload, '#{path}') IN (#{TYPES.fetch(value.class)}) " \
          "AND json_extract(payload, '#{path}') = ?",
          bindable(value)
        ]
      end

      def path_for(key)
        unless /\A\w+\z/.match?(key.to_s)
          raise ArgumentError, "payload field names are letters, digits " \
            "and _ (got #{key.inspect})"
        end
        "$.#{key}"
      end

      def check_value(key, value)
        return if plain?(value)
        raise ArgumentError,
          "poll matches payload field #{key.inspect} against #{VALUES} " \
          "(got #{value.class}: #{value.inspect[0, 100]})"
      end

      # A scalar of TYPES, or an Array of them, nil and other such Arrays: no Hash, whose keys JSON leaves unordered.
      def plain?(value)
        return false unless TYPES.key?(value.class)
        !value.is_a?(Array) || value.all? { |item| item.nil? || plain?(item) }
      end

      # An Array as the JSON text json_extract gives an array field; SQLite's JSON functions give true and false as
      # 1 and 0.
      def bindable(value)
        case value
        when Array then SQLiteFile::JSON_CODER.dump(value)
        when true then 1
        when false then 0
        when Symbol then value.to_s
        else value
        end
      end
    end
  end
end
