# frozen_string_literal: true

require "connection_pool"
require_relative "../../error"
require_relative "../../config/redaction"

begin
  require "pg"
rescue LoadError
  raise Jiggler::Error,
    "the PostgreSQL store (database_url, JIGGLER_DATABASE_URL) needs the " \
    "pg gem: add `gem \"pg\", \">= 1.3\"` to your Gemfile"
end

module Jiggler
  module Store
    class Postgres
      # The connections of a PostgreSQL store and what its roles need of them: statements with
      # parameters, in a transaction when asked, in the store's schema. SQL names the store's tables
      # as `@.jobs`; `query` puts the quoted schema (the namespace) in place of `@`, so one database
      # holds any number of namespaces.
      #
      # It holds a pool of connections of its own (a ConnectionPool, which lends one connection per
      # fiber and thread and gives the same one back to a nested call), or one connection the
      # application lends (transactional enqueue): then it runs inside the application's transaction
      # when one is open, and opens none of its own. The pg gem (1.3 and later) waits on the socket
      # through Async's fiber scheduler: a query blocks its fiber, not its thread.
      class Connection
        # Every statement has a timeout (DESIGN.md, invariant 5); connecting too.
        SETTINGS = {
          connect_timeout: 5, application_name: "jiggler",
          options: "-c statement_timeout=15000 -c lock_timeout=10000 " \
            "-c idle_in_transaction_session_timeout=60000 " \
            "-c client_min_messages=warning"
        }.freeze
        POOL_TIMEOUT = 10
        # What PgBouncer answers a connection that sends `options`.
        REFUSED_OPTIONS = "unsupported startup parameter: options"
        ABANDONED = [
          PG::PQTRANS_ACTIVE,
          PG::PQTRANS_INERROR,
          PG::PQTRANS_UNKNOWN
        ].freeze

        # A payload sent as bytes (bytea), which a text parameter could not carry (a NUL, bytes that
        # are not UTF-8).
        Bytes = Struct.new(:string)

        # Reads a bytea column (PostgreSQL's hex output) back as the String that was written, in
        # UTF-8 as the other stores' payloads are.
        class PayloadDecoder < PG::SimpleDecoder
          def decode(text, _tuple = nil, _field = nil)
            [text[2..]].pack("H*").force_encoding(Encoding::UTF_8)
          end
        end
        # Fixed type maps of the few types the store's tables use (built-in oids): PG's basic maps
        # would read pg_type on every new connection.
        RESULTS = PG::TypeMapByOid.new.tap do |map|
          decoders = {
            20 => PG::TextDecoder::Integer, 23 => PG::TextDecoder::Integer,
            21 => PG::TextDecoder::Integer, 701 => PG::TextDecoder::Float,
            16 => PG::TextDecoder::Boolean, 17 => PayloadDecoder
          }
          decoders.each { |oid, decoder| map.add_coder(decoder.new(oid: oid)) }
        end
        QUERIES = PG::TypeMapByClass.new.tap do |map|
          map[Integer] = PG::TextEncoder::Integer.new
          map[TrueClass] = map[FalseClass] = PG::TextEncoder::Boolean.new
          map[Array] = PG::TextEncoder::Array.new
        end

        attr_reader :schema, :url

        # @parameter url [String | Nil] a postgres:// URL; nil with `connection`.
        # @parameter schema [String] the schema the store's tables live in.
        # @parameter size [Integer] connections at most.
        # @parameter connection [PG::Connection | #with_connection | Nil] an application's connection to
        #   write through instead, or what lends one for each call (ActiveRecordConnection).
        def initialize(url:, schema:, size: 1, connection: nil)
          @url = url
          @schema = schema
          @lent = connection
          @prefix = "#{PG::Connection.quote_ident(schema)}."
          @sql = {}
          @pool = new_pool(size) unless connection
        end

        # A new connection of the store's own, outside the pool (the wake subscription's). A pooler
        # that refuses startup options (PgBouncer) gets a connection without them: the timeouts are
        # then the role's or the database's (`ALTER ROLE ... SET statement_timeout`), and `pooled?`
        # says so.
        # @returns [PG::Connection]
        def connect
          without_options = @pooled
          begin
            connection = PG.connect(
              @url,
              **(without_options ? SETTINGS.except(:options) : SETTINGS)
            )
            # Without `client_min_messages=warning`, the schema's IF NOT EXISTS notices would reach stderr.
            if without_options
              connection.set_notice_receiver { |result| quiet(result) }
            end
            connection
          rescue PG::Error => error
            if without_options || !error.message.include?(REFUSED_OPTIONS)
              raise ConnectionError, failure(error)
            end
            @pooled = without_options = true
            retry
          end
        end

        # Whether a pooler in front of the database refused the connections' startup options.
        def pooled? = @pooled == true

        # Runs a block with a connection, one caller at a time for each.
        # @yields {|connection| ...} a PG::Connection.
        def with(&block)
          return yield(@lent) if @lent.is_a?(PG::Connection)
          return @lent.with_connection(&block) if @lent
          @pool.with { |connection| usable(connection).then(&block) }
        rescue PG::Error, ConnectionPool::TimeoutError => error
          raise ConnectionError, failure(error)
        end

        # Runs a block in a transaction (the caller's, when one is open on the connection).
        def transaction
          with do |connection|
            next yield if connection.transaction_status != PG::PQTRANS_IDLE
            connection.transaction { yield }
          end
        end

        # Runs one statement. @returns [Array(Array)] the rows, values decoded (numbers, booleans,
        # text).
        def query(sql, params = [])
          with do |connection|
            result = execute(connection, sql, params)
            result.type_map = RESULTS
            result.values
          end
        end

        # Runs statements without parameters (the schema's).
        def run(sql)
          with { |connection| connection.exec(sql.gsub("@.", @prefix)) }
        end

        # Marks a payload to be sent as bytes. @returns [Bytes | Nil]
        def bytes(payload) = payload && Bytes.new(payload)

        # The first value of the first row. @returns [Object | Nil]
        def value(sql, params = []) = query(sql, params).first&.first

        # How many rows a statement changed. @returns [Integer]
        def change(sql, params = [])
          with { |connection| execute(connection, sql, params).cmd_tuples }
        end

        def close
          @pool&.shutdown(&:close)
          @pool = new_pool(@pool.size) if @pool
        end

        # A message about a failure that shows the URL without its password.
        def failure(error)
          where =
            @url ? Config::Redaction.url(@url) : "an application's connection"
          # libpq's messages run over several lines; a log line is one.
          Config::Redaction.text(
            "#{where}: #{error.message.strip.gsub(/\s*\n\s*/, "; ")}"
          )
        end

        private

        # The type maps go with each statement, not the connection: an application's keeps its own.
        def execute(connection, sql, params)
          sql = @sql[sql] ||= sql.gsub("@.", @prefix)
          connection.exec_params(
            sql,
            params.map { |value| exact(value) },
            0,
            QUERIES
          )
        end

        # Times are compared exactly (a set entry is found by its score): a Float is sent as Ruby
        # writes it, the shortest text that reads back as the same double, which pg's encoder does
        # not promise.
        def exact(value)
          case value
          when Float then value.to_s
          when Bytes then "\\x#{value.string.unpack1("H*")}"
          when Array then value.map { |item| exact(item) }
          else value
          end
        end

        def quiet(result)
          severity =
            result.error_field(PG::Result::PG_DIAG_SEVERITY_NONLOCALIZED)
          unless %w[NOTICE DEBUG LOG INFO].include?(severity)
            warn(result.error_message)
          end
        end

        def new_pool(size)
          ConnectionPool.new(size: size, timeout: POOL_TIMEOUT) { connect }
        end

        # A connection the server closed (a restart, a failover), or that a stopped fiber left in the
        # middle of a statement or in a failed transaction (Async::Stop at shutdown), is opened again
        # before it is lent. One still in a transaction is lent as it is: a nested call of the fiber
        # that opened it.
        def usable(connection)
          broken = connection.status != PG::CONNECTION_OK ||
            ABANDONED.include?(connection.transaction_status)
          connection.reset if broken
          connection
        end
      end
    end
  end
end
