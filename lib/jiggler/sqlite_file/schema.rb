# frozen_string_literal: true

module Jiggler
  module SQLiteFile
    # The tables of one kind of jiggler file, by version, and the mark (SQLite's application_id header field) that
    # says whose file it is. A new file gets every version; an older one is migrated step by step; a file of the
    # other kind (unless `adopt` takes it over), one that is not jiggler's, or one from a newer jiggler is refused
    # without being touched.
    class Schema
      # The marks of the two kinds ("JIGL" and "JOBQ"), and what each kind is called in messages.
      STORE = 0x4a49474c
      JOB_QUEUE = 0x4a4f4251
      KINDS = {
        STORE => "the SQLite store's database",
        JOB_QUEUE => "a Jiggler::JobQueue file"
      }.freeze

      # What `check` returns for a file of the other kind that `adopt` takes over.
      ADOPTED = -1

      attr_reader :application_id, :migrations

      # @parameter application_id [Integer] STORE or JOB_QUEUE.
      # @parameter migrations [Hash(Integer, String | Proc)] each version's SQL, or a Proc given the connection for a
      #   step that depends on the data, from 1.
      # @parameter adopt [#adopts?, #adopt | Nil] takes over files of the other kind that were this kind's before
      #   each kind had its own mark: `adopts?(db, application_id, version)` says whether it can, `adopt(db)`
      #   converts the file inside the migration's transaction and returns the version it leaves it at.
      def initialize(application_id, migrations, adopt: nil)
        @application_id = application_id
        @kind = KINDS.fetch(application_id)
        @migrations = migrations
        @adopt = adopt
      end

      # @returns [Integer] the version this jiggler writes.
      def version = @migrations.keys.max

      # Creates or upgrades the tables; checks the file again inside the transaction, as another process may be
      # doing the same.
      # @parameter db [SQLite3::Database] not in a transaction.
      # @parameter path [String] the file, for messages.
      # @raises [OpenError] as `check` does.
      def migrate(db, path)
        db.transaction(:immediate) do
          current = check(db, path)
          current = @adopt.adopt(db) if current == ADOPTED
          (current + 1..version).each do |step|
            migration = @migrations.fetch(step)
            if migration.respond_to?(:call)
              migration.call(db)
            else
              db.execute_batch(migration)
            end
          end
          db.execute("PRAGMA application_id = #{@application_id}")
          db.execute("PRAGMA user_version = #{version}")
        end
      end

      # @returns [Integer] the file's version (0 for a new file; ADOPTED for one `adopt` takes over).
      # @raises [OpenError] for a file of another kind, one that is not jiggler's, or one from a newer jiggler;
      #   nothing is changed.
      def check(db, path)
        # One statement, one snapshot: another process may be creating the tables right now.
        application, file_version, tables = db.get_first_row(
          "SELECT (SELECT application_id FROM pragma_application_id), " \
          "(SELECT user_version FROM pragma_user_version), " \
          "(SELECT count(*) FROM sqlite_master)"
        )
        new_file = application.zero? && tables.zero?
        unless new_file || application == @application_id
          return ADOPTED if @adopt&.adopts?(db, application, file_version)
          refuse_other(path, application)
        end
        if file_version > version
          raise OpenError,
            "#{path} was written by a newer jiggler " \
            "(schema #{file_version}, this one knows #{version}); " \
            "upgrade jiggler or point it at another file"
        end
        file_version
      end

      private

      def refuse_other(path, application)
        other = KINDS[application]
        unless other
          raise OpenError,
            "#{path} is not a jiggler database " \
            "(it holds other tables); nothing was changed"
        end
        raise OpenError,
          "#{path} is #{other}, not #{@kind}: " \
          "each keeps a file of its own; nothing was changed"
      end
    end
  end
end
