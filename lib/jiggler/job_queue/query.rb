# frozen_string_literal: true

require_relative "state"

module Jiggler
  class JobQueue
    # A `poll` query turned into SQL: `state:` compares the job's state as JSON; any other key names a top-level
    # payload field that must equal the value.
    module Query
      ACCEPTED = "a Hash of state: and payload fields ({state: \"new\", \"kind\" => \"email\"}), or nil for any job"

      module_function

      # @parameter query [Hash | Nil]
      # @returns [Array(String, Array)] the SQL condition and the values for its placeholders.
      # @raises [ArgumentError] for a query that is neither a Hash nor nil, or a field name that is not a plain word.
      def conditions(query)
        raise ArgumentError, "poll's query must be #{ACCEPTED} (got #{query.inspect})" unless query.nil? || query.is_a?(Hash)
        clauses = []
        values = []
        query&.each do |key, value|
          column = column_for(key)
          value = (column == "state") ? State.dump(value) : bindable(value)
          if value.nil?
            clauses << "#{column} IS NULL"
          else
            clauses << "#{column} = ?"
            values << value
          end
        end
        [clauses.empty? ? "1" : clauses.join(" AND "), values]
      end

      def column_for(key)
        return "state" if key.to_s == "state"
        raise ArgumentError, "payload field names are letters, digits and _ (got #{key.inspect})" unless /\A\w+\z/.match?(key.to_s)
        "json_extract(payload, '$.#{key}')"
      end

      # SQLite's JSON functions give true and false as 1 and 0.
      def bindable(value)
        case value
        when true then 1
        when false then 0
        when Symbol then value.to_s
        else value
        end
      end
    end
  end
end
