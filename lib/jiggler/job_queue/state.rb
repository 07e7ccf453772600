# frozen_string_literal: true

require "json"
require "sqlite3"
require_relative "../sqlite_file"

module Jiggler
  class JobQueue
    # How a job's state, any JSON value, is kept in the `state` column. A String is stored as TEXT, as it is, so the
    # common states compare through the index as plain text. nil is NULL. Any other JSON value is stored as a BLOB
    # holding its JSON text, objects with their keys sorted: SQLite never finds a BLOB equal to a TEXT, so `["new"]`
    # can never match the string "new", and two equal values always have the same bytes, so `state = ?` compares
    # them as JSON.
    module State
      module_function

      # @parameter state [Object] a JSON value (a Symbol counts as its String).
      # @returns [String | SQLite3::Blob | Nil] what to bind for the column.
      # @raises [ArgumentError] for a value that is not JSON.
      def dump(state)
        case state
        when String, nil then state
        when Symbol then state.to_s
        else SQLite3::Blob.new(SQLiteFile::JSON_CODER.dump(canonical(state)))
        end
      rescue JSON::GeneratorError => error
        raise ArgumentError,
          "a job's state must be a JSON value: nil, true, false, a number, " \
          "a String, or an Array or Hash of these (#{error.message})"
      end

      # @parameter value [String | Nil] the column's value.
      # @parameter type [String] its SQLite type, from `typeof(state)`.
      # @returns [Object] the state as it was given to `dump` (Symbols as Strings).
      def load(value, type)
        (type == "blob") ? SQLiteFile::JSON_CODER.load(value) : value
      end

      # Object keys as Strings, sorted, at every depth: JSON objects are unordered, and equal states must compare
      # equal in SQL.
      def canonical(value)
        case value
        when Hash
          value.map { |key, item| [key.to_s, canonical(item)] }
            .sort_by(&:first)
            .to_h
        when Array then value.map { |item| canonical(item) }
        else value
        end
      end
    end
  end
end
