# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "json"
require "rbconfig"
require "jiggler/job_queue"
require "jiggler/store/sqlite"

# Ruby programs the tests run as child processes, on the queue file named by ARGV[0].
module JobQueueChildren
  LIB = File.expand_path("../../lib", __dir__)

  # A child that opens the queue at ARGV[0], says "ready", waits for a line on stdin, then polls "new" jobs into
  # "taken:<pid>" until none is left, and writes the ids it got to ARGV[1].
  POLLER = <<~RUBY
    require "jiggler/job_queue"
    queue = Jiggler::JobQueue.new(ARGV[0])
    $stdout.puts "ready"
    $stdout.flush
    $stdin.gets
    ids = []
    while (job = queue.poll({state: "new"}, "taken:\#{Process.pid}"))
      ids << job.id
    end
    File.write(ARGV[1], ids.join("\\n"))
  RUBY

  # A child that creates 50 jobs and an event at ARGV[0] (synchronous ARGV[1]), prints their ids once every one is
  # committed, and kills itself with SIGKILL: no close, no checkpoint, no at_exit.
  CRASHER = <<~RUBY
    require "jiggler/job_queue"
    queue = Jiggler::JobQueue.new(ARGV[0], synchronous: ARGV[1])
    ids = Array.new(50) { |n| queue.create({"n" => n}, "new").id }
    queue.append_event(ids.last, "committed")
    $stdout.puts ids.join(",")
    $stdout.flush
    Process.kill(:KILL, Process.pid)
    sleep 10
  RUBY

  # A child that, when told to, opens (creating and migrating) the queues ARGV[0]/0.sqlite3 to
  # ARGV[0]/<ARGV[1] - 1>.sqlite3 in turn, adding a job to each; it prints every error and exits 1 if there was any.
  OPENER = <<~RUBY
    require "jiggler/job_queue"
    $stdout.puts "ready"
    $stdout.flush
    $stdin.gets
    errors = Integer(ARGV[1]).times.filter_map do |index|
      Jiggler::JobQueue.open(File.join(ARGV[0], "\#{index}.sqlite3")) do |queue|
        queue.create({"pid" => Process.pid}, "new")
      end
      nil
    rescue => error
      warn "\#{index}.sqlite3: \#{error.class}: \#{error.message}"
      error
    end
    exit(errors.empty? ? 0 : 1)
  RUBY

  Child = Struct.new(:pid, :out, :go, :log)
end

# Runs a callback once, on this thread, right after the next statement that reads PRAGMA application_id and before the
# statement that follows it: to put another process's work between two reads of JobQueue's check of a file.
module MigrateBetweenReads
  def self.once(callback)
    Thread.current[:jiggler_between_reads] = callback
    yield
  ensure
    Thread.current[:jiggler_between_reads] = nil
  end

  def prepare(sql)
    callback = Thread.current[:jiggler_between_reads]
    if callback && @application_id_read
      Thread.current[:jiggler_between_reads] = nil
      callback.call
    end
    @application_id_read = callback && sql.include?("application_id")
    super
  end
end
SQLite3::Database.prepend(MigrateBetweenReads)

# Jiggler::JobQueue, the jobq API on one SQLite file: create, get, poll, cas_state, append_event, delete, close; many
# connections and processes on one file; crashes; files it must refuse without touching them.
describe Jiggler::JobQueue do
  before do
    @dir = Dir.mktmpdir("jiggler-job-queue")
    @queues = []
    @children = []
  end

  after do
    @queues.each(&:close)
    @children.each do |child|
      Process.kill(:KILL, child.pid)
      Process.wait(child.pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
    unless passed?
      @children.each do |child|
        if File.size?(child.log)
          warn("--- child #{child.pid} stderr:\n#{File.read(child.log)}")
        end
      end
    end
    FileUtils.rm_rf(@dir)
  end

  def path(name = "jobs.sqlite3") = File.join(@dir, name)

  # A queue closed after the test.
  def open_queue(file = path, **options)
    Jiggler::JobQueue.new(file, **options).tap { |queue| @queues << queue }
  end

  def queue = @queue ||= open_queue

  def pragma(db, name) = db.get_first_value("PRAGMA #{name}")

  # The event that opens every job's log.
  def created(state) = {"type" => "job_created", "state" => state}

  # Starts `ruby -I lib -e script *args`; its stdout and stdin are pipes.
  def spawn_ruby(script, *args)
    out_reader, out_writer = IO.pipe
    in_reader, in_writer = IO.pipe
    log = File.join(@dir, "child-#{@children.size}.log")
    pid = Process.spawn(
      RbConfig.ruby,
      "-I",
      JobQueueChildren::LIB,
      "-e",
      script,
      *args,
      in: in_reader,
      out: out_writer,
      err: log
    )
    [out_writer, in_reader].each(&:close)
    JobQueueChildren::Child.new(pid, out_reader, in_writer, log)
      .tap { |child| @children << child }
  end

  # A line of a child's output, or a failure after `timeout` seconds.
  def read_line(child, timeout: 20)
    assert IO.select([child.out], nil, nil, timeout),
      "child #{child.pid} printed nothing within #{timeout} s: " \
      "#{File.read(child.log)}"
    child.out.gets
  end

  # Waits for a child to exit. @returns [Process::Status]
  def wait_exit(child, timeout: 20)
    wait_for(timeout: timeout, message: "child #{child.pid} to exit") do
      Process.wait2(child.pid, Process::WNOHANG)&.last
    end
  end

  # The bytes of a file and the names beside it, to prove that a refused file was left alone.
  def snapshot(file)
    [File.binread(file), Dir.children(File.dirname(file)).sort]
  end

  # Asserts that opening `file` raises OpenError naming it, and changes neither the file nor its directory.
  def assert_refused(file, reason)
    before = snapshot(file)
    error = assert_raises(Jiggler::JobQueue::OpenError) do
      Jiggler::JobQueue.new(file)
    end
    assert_includes error.message, file, "the error should name the file"
    assert_match reason, error.message
    assert_equal before, snapshot(file),
      "the file's bytes (and the files beside it) should be unchanged"
    error
  end

  describe "opening" do
    it "creates the file, in WAL mode with synchronous NORMAL by default, " \
      "and the block form closes it" do
      result = Jiggler::JobQueue.open(path) do |queue|
        assert_equal path, queue.path
        assert_equal "wal", pragma(queue.db, "journal_mode")
        assert_equal 1, pragma(queue.db, "synchronous"), "NORMAL"
        assert_equal Jiggler::JobQueue::SCHEMA.version,
          pragma(queue.db, "user_version")
        assert_equal Jiggler::JobQueue::SCHEMA.application_id,
          pragma(queue.db, "application_id")
        @opened = queue
        queue.create({"a" => 1}, "new").id
      end
      assert_equal 1, result, "open returns the block's value"
      assert File.file?(path)
      assert_predicate @opened.db, :closed?
    end

    it "closes the queue when the block raises" do
      assert_raises(RuntimeError) do
        Jiggler::JobQueue.open(path) do |queue|
          @opened = queue
          raise "inside the block"
        end
      end
      assert_predicate @opened.db, :closed?
    end

    it "returns the open queue without a block, " \
      "and close can be called twice" do
      queue = Jiggler::JobQueue.open(path)
      refute_predicate queue.db, :closed?
      queue.close
      queue.close
      assert_predicate queue.db, :closed?
    end

    it "creates missing directories" do
      file = File.join(@dir, "a", "b", "jobs.sqlite3")
      open_queue(file).create({}, "new")
      assert File.file?(file)
    end

    it "takes synchronous FULL" do
      assert_equal 2, pragma(open_queue(synchronous: "full").db, "synchronous")
      assert_equal 2, pragma(
        open_queue(path("other.sqlite3"), synchronous: :full).db,
        "synchronous"
      )
    end

    it "refuses another synchronous setting before creating anything" do
      %w[off extra FAST].each do |value|
        error = assert_raises(ArgumentError) do
          Jiggler::JobQueue.new(path, synchronous: value)
        end
        assert_match(/normal, full/, error.message)
      end
      refute File.exist?(path),
        "no file should be created for a refused setting"
    end

    it "keeps its jobs and events when reopened, migrating only once" do
      first = Jiggler::JobQueue.open(path) do |queue|
        id = queue.create({"url" => "https://example.com"}, "new").id
        queue.append_event(id, "created")
        id
      end
      tables = nil
      3.times do
        Jiggler::JobQueue.open(path) do |queue|
          job = queue.get(first)
          assert_equal ["new", {"url" => "https://example.com"}],
            [job.state, job.payload]
          assert_equal [created("new"), "created"], job.events.map(&:last)
          assert_equal Jiggler::JobQueue::SCHEMA.version,
            pragma(queue.db, "user_version")
          schema = queue.db.execute(
            "SELECT type, name FROM sqlite_master ORDER BY name"
          )
          tables ||= schema
          assert_equal tables, schema, "reopening must not add or change tables"
        end
      end
      assert_equal 1, Jiggler::JobQueue.open(path) { |queue|
        queue.db.get_first_value("SELECT count(*) FROM jobs")
      }
    end

    # Three processes open the same 20 new files in the same order, so that they race at creating each one.
    it "lets several processes create and migrate new files at once" do
      files = 20
      children = Array.new(3) do
        spawn_ruby(JobQueueChildren::OPENER, @dir, files.to_s)
      end
      children.each { |child| assert_equal "ready\n", read_line(child) }
      children.each { |child| child.go.puts("go") }
      children.each do |child|
        assert_equal 0, wait_exit(child, timeout: 30).exitstatus,
          File.read(child.log)
      end
      files.times do |index|
        pids = open_queue(path("#{index}.sqlite3")).db
          .execute("SELECT payload FROM jobs")
          .map { |(json)| JSON.parse(json)["pid"] }
        assert_equal children.map(&:pid).sort, pids.sort
      end
    end

    # The moment two processes opening one new file race at, made certain: another connection creates and migrates the
    # file between this one's first look at it (an empty file, no application id) and its next. (The other opens on a
    # thread given a second to finish, so that a check that holds a read lock across its reads is not deadlocked.)
    it "accepts a new file that another process migrates " \
      "while this one is checking it" do
      other_open = -> {
        Jiggler::JobQueue.open(path) do |queue|
          queue.create({"by" => "other"}, "new")
        end
      }
      other = nil
      MigrateBetweenReads.once(
        -> { (other = Thread.new(&other_open)).join(1) }
      ) do
        open_queue.create({"by" => "this"}, "new")
      end
      refute_nil other,
        "the other connection never opened between this one's reads: " \
        "the test did not race"
      other.value
      assert_equal %w[other this],
        queue.db.execute("SELECT payload FROM jobs")
          .map { |(json)| JSON.parse(json)["by"] }
          .sort
    end

    # Switching a new file to WAL needs the file to itself for a moment; SQLite does not call the busy handler for that
    # lock, so the queue must wait for it as for any other lock.
    it "waits for another connection's lock while setting up a new file, " \
      "rather than failing" do
      holder = SQLite3::Database.new(path)
      holder.execute("BEGIN IMMEDIATE")
      release = Thread.new do
        sleep 0.3 # the time the other connection holds its lock
        holder.execute("COMMIT")
      end
      queue = open_queue
      assert_equal "wal", pragma(queue.db, "journal_mode")
      assert_equal 1, queue.create({}, "new").id
    ensure
      release&.join
      holder&.close
    end

    it "works in memory" do
      memory = open_queue(":memory:")
      id = memory.create({"a" => 1}, "new").id
      assert_equal id, memory.poll({state: "new"}, "done").id
      refute File.exist?(":memory:")
    end
  end

  describe "its file" do
    it "defines its tables in its own schema file, " \
      "as the SQLite and PostgreSQL stores do theirs, and nowhere else" do
      lib = File.expand_path("../../lib", __dir__)
      ddl = /\b(CREATE|ALTER|DROP)\s+(TABLE|INDEX|UNIQUE|VIEW|TRIGGER)\b|PRAGMA\s+user_version\s*=/i
      files = Dir[File.join(lib, "**", "*.{rb,lua,sql}")]
        .select { |file| ddl.match?(File.read(file)) }
      # sqlite_file/schema.rb runs the SQLite files' migrations and sets their version; job_queue/former_file.rb
      # converts JobQueue's files from before it had a mark of its own.
      schemas = %w[
        job_queue/former_file.rb
        job_queue/schema.rb
        sqlite_file/schema.rb
        store/postgres/schema.rb
        store/sqlite/schema.rb
      ]
      assert_equal schemas.map { |file| File.join(lib, "jiggler", file) },
        files.sort
    end

    it "is marked as a JobQueue file, not as the SQLite store's" do
      refute_equal Jiggler::Store::SQLite::SCHEMA.application_id,
        pragma(queue.db, "application_id")
      assert_equal [["events"], ["jobs"]], queue.db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' " \
        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
      )
    end
  end

  # The SQLite store keeps its jobs in a file of its own: a JobQueue opened on it must not reach them.
  describe "on the SQLite store's file" do
    def store_file_with_a_job
      store = Jiggler::Store::SQLite.new(path: path)
      store.push(
        "default",
        [JSON.generate("jid" => "a", "class" => "HardJob", "args" => [])]
      )
      store.close
    end

    it "refuses it, unchanged, and the store still has its job" do
      store_file_with_a_job
      assert_refused(
        path,
        /is the SQLite store's database, not a Jiggler::JobQueue file/
      )
      store = Jiggler::Store::SQLite.new(path: path)
      assert_equal({"default" => 1}, store.queue_sizes)
      assert_equal [{"type" => "enqueued"}], store.history("a").map(&:last)
    ensure
      store&.close
    end

    # Until JobQueue had a mark of its own, its files had the store's: `version` of the store's schema, with
    # `rows` in its jobs table (JobQueue's have neither a queue nor a run time) and `events`.
    def former_file(version, rows, events)
      db = SQLite3::Database.new(path)
      schema = Jiggler::Store::SQLite::SCHEMA
      (1..version).each do |step|
        db.execute_batch(schema.migrations.fetch(step))
      end
      db.execute("PRAGMA application_id = #{schema.application_id}")
      db.execute("PRAGMA user_version = #{version}")
      rows.each do |row|
        db.execute(
          "INSERT INTO jobs (#{row.keys.join(", ")}) " \
          "VALUES (#{(["?"] * row.size).join(", ")})",
          row.values
        )
      end
      events.each do |id, at, event|
        db.execute(
          "INSERT INTO events (job_id, at, event) VALUES (?, ?, ?)",
          [id, at, JSON.generate(event)]
        )
      end
      db.close
    end

    it "takes over a JobQueue file of schema 3, its jobs and events " \
      "as they were, ordered by their last event" do
      former_file(
        3,
        [
          {id: 1, state: "new", payload: '{"n":1}'},
          {id: 2, state: "new", payload: '{"n":2}'}
        ],
        [[1, 2000.0, "late"], [2, 1000.0, "early"]]
      )
      job = queue.get(1)
      assert_equal ["new", {"n" => 1}, ["late"]],
        [job.state, job.payload, job.events.map(&:last)]
      assert_equal Time.at(2000.0), job.modified
      assert_equal 2, queue.poll({state: "new"}, "taken").id,
        "least recently modified first"
      assert_equal Jiggler::JobQueue::SCHEMA.application_id,
        pragma(queue.db, "application_id")
      assert_equal [["events"], ["jobs"]], queue.db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' " \
        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
      )
      assert_equal 3, queue.create({"n" => 3}, "new").id, "ids go on"
    end

    it "takes over a JobQueue file of schema 11, states of any JSON kept" do
      state = SQLite3::Blob.new('["fetching",1]')
      former_file(
        11,
        [{id: 7, state: state, payload: "{}", modified: 1500.0}],
        [[7, 1400.0, {"type" => "job_created", "state" => "new"}]]
      )
      job = queue.get(7)
      assert_equal [["fetching", 1], Time.at(1500.0)], [job.state, job.modified]
      assert_equal 7, queue.cas_state(7, ["fetching", 1], "done").id
    end

    it "refuses a file of then that holds the store's jobs, unchanged" do
      former_file(
        3,
        [
          {id: 1, state: "new", payload: "{}"},
          {id: 2, state: "queued", queue: "default", run_at: 1.0, payload: "{}"}
        ],
        []
      )
      assert_refused(path, /is the SQLite store's database/)
    end

    it "refuses a file of then that holds the store's other data, unchanged" do
      former_file(3, [{id: 1, state: "new", payload: "{}"}], [])
      db = SQLite3::Database.new(path)
      db.execute("INSERT INTO counters (name, value) VALUES ('processed', 5)")
      db.close
      assert_refused(path, /is the SQLite store's database/)
    end
  end

  describe "refusing a file" do
    it "raises OpenError naming the path " \
      "when its directory cannot be created" do
      blocker = path("blocker")
      File.write(blocker, "a plain file where a directory should be\n")
      file = File.join(blocker, "sub", "jobs.sqlite3")
      before = File.binread(blocker)
      error = assert_raises(Jiggler::JobQueue::OpenError) do
        Jiggler::JobQueue.new(file)
      end
      assert_includes error.message, file
      assert_equal before, File.binread(blocker)
      assert_kind_of Jiggler::Error, error
    end

    it "raises OpenError naming the path when it is a directory" do
      FileUtils.mkdir_p(path)
      error = assert_raises(Jiggler::JobQueue::OpenError) do
        Jiggler::JobQueue.new(path)
      end
      assert_includes error.message, path
      assert_empty Dir.children(path)
    end

    it "refuses a file that is not an SQLite database, unchanged" do
      File.binwrite(path, "this is not a database\n" * 200)
      assert_refused(path, /not a jiggler database/)
    end

    it "refuses a file of random bytes, unchanged" do
      File.binwrite(path, Random.new(42).bytes(8192))
      assert_refused(path, /not a jiggler database/)
    end

    it "refuses an SQLite database with other tables, unchanged" do
      db = SQLite3::Database.new(path)
      db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
      db.execute("INSERT INTO users (name) VALUES ('ada')")
      db.close
      assert_refused(path, /not a jiggler database/)
      assert_equal [[1, "ada"]],
        SQLite3::Database.new(path).execute("SELECT * FROM users")
    end

    it "refuses an SQLite database of another application, " \
      "even without tables, unchanged" do
      db = SQLite3::Database.new(path)
      db.execute("PRAGMA application_id = 1234")
      db.close
      assert_refused(path, /not a jiggler database/)
    end

    it "refuses a jiggler database from a newer version, unchanged" do
      Jiggler::JobQueue.open(path) do |queue|
        queue.create({"keep" => true}, "new")
      end
      db = SQLite3::Database.new(path)
      db.execute(
        "PRAGMA user_version = #{Jiggler::JobQueue::SCHEMA.version + 1}"
      )
      db.close
      assert_refused(
        path,
        /newer jiggler \(schema #{Jiggler::JobQueue::SCHEMA.version + 1}/
      )
    end
  end

  describe "jobs" do
    it "creates jobs with increasing ids and returns each " \
      "as get reads it back, creation logged" do
      payload = {
        "user_id" => 2**40,
        "msg" => "héllo ✓",
        "tags" => ["a", 1, 2.5, nil, true],
        "nested" => {"k" => []}
      }
      before = Time.now
      first = queue.create(payload, "new")
      second = queue.create({"n" => 2}, "other")
      assert_kind_of Jiggler::JobQueue::Job, first
      assert_operator second.id, :>, first.id
      assert_equal [payload, "new", [created("new")]],
        [first.payload, first.state, first.events.map(&:last)]
      assert_kind_of Time, first.modified
      assert_operator first.modified, :>=, before - 1
      assert_equal first.modified.to_f, first.events.first.first
      assert_equal first, queue.get(first.id)
      assert_equal second, queue.get(second.id)
      assert_equal "other", queue.get(second.id).state
    end

    it "returns the payload as stored: JSON types, string keys" do
      job = queue.create({kind: :email, at: 1.5}, "new")
      assert_equal({"kind" => "email", "at" => 1.5}, job.payload)
      assert_equal job, queue.get(job.id)
    end

    it "creates a job without a state, read back as nil and pollable as nil" do
      id = queue.create({"a" => 1}).id
      assert_nil queue.get(id).state
      assert_equal id, queue.poll({state: nil}, "taken")&.id
    end

    it "returns nil for an unknown id" do
      assert_nil queue.get(12345)
    end

    it "deletes a job and its events" do
      id = queue.create({"a" => 1}, "new").id
      other = queue.create({"b" => 2}, "new").id
      queue.append_event(id, "one")
      queue.append_event(other, "kept")
      assert_equal true, queue.delete(id)
      assert_nil queue.get(id)
      assert_equal [], queue.events(id)
      assert_equal 0, queue.db.get_first_value(
        "SELECT count(*) FROM events WHERE job_id = ?",
        [id]
      )
      assert_equal false, queue.delete(id)
      assert_equal [created("new"), "kept"], queue.get(other).events.map(&:last)
    end

    it "never gives a deleted job's id to a new job" do
      id = queue.create({"old" => true}, "new").id
      queue.delete(id)
      queue.append_event(id, "from a process still holding the old id")
      queue.cas_state(id, "new", "taken")
      fresh = queue.create({"new" => true}, "new").id
      refute_equal id, fresh,
        "a stale id held elsewhere (cas_state, append_event) " \
        "must not reach another job"
      assert_equal [created("new")], queue.get(fresh).events.map(&:last)
    end
  end

  describe "poll" do
    it "takes the oldest job in a state, moves it and returns it as it is " \
      "now; nil when none is left" do
      ids = %w[a b c].map { |name| queue.create({"name" => name}, "new").id }
      queue.create({"name" => "other"}, "done")
      taken = Array.new(3) { queue.poll({state: "new"}, "working") }
      assert_equal ids, taken.map(&:id)
      assert_equal %w[working] * 3, taken.map(&:state)
      assert_equal %w[a b c], taken.map { |job| job.payload["name"] }
      assert_nil queue.poll({state: "new"}, "working")
      assert_equal %w[working] * 3, ids.map { |id| queue.get(id).state }
    end

    it "takes the oldest match, not the first created, " \
      "when older ones are in another state" do
      first = queue.create({}, "new").id
      second = queue.create({}, "new").id
      queue.cas_state(first, "new", "held")
      assert_equal second, queue.poll({state: "new"}, "working").id
      queue.cas_state(first, "held", "new")
      assert_equal first, queue.poll({state: "new"}, "working").id
    end

    it "matches payload fields, with or without a state" do
      email = queue.create({"kind" => "email", "to" => "a"}, "new").id
      sms = queue.create({"kind" => "sms", "to" => "b"}, "new").id
      late_email = queue.create({"kind" => "email", "to" => "c"}, "later").id
      assert_equal sms, queue.poll({"kind" => "sms"}, "sent").id
      assert_equal email,
        queue.poll({:state => "new", "kind" => "email"}, "sent").id
      assert_nil queue.poll({:state => "new", "kind" => "email"}, "sent")
      assert_equal late_email,
        queue.poll({kind: "email", state: "later"}, "sent").id,
        "symbol field names too"
      assert_nil queue.poll({"kind" => "fax"}, "sent")
    end

    it "matches numbers, symbols and booleans in payload fields" do
      one = queue.create(
        {"n" => 1, "ratio" => 0.5, "urgent" => true, "lane" => "fast"},
        "new"
      ).id
      two = queue.create(
        {"n" => 2, "ratio" => 1.5, "urgent" => false, "lane" => "slow"},
        "new"
      ).id
      assert_equal two, queue.poll({"n" => 2}, "x").id
      assert_equal one, queue.poll({"ratio" => 0.5}, "x").id
      assert_equal [one, two],
        %i[fast slow].map { |lane| queue.poll({"lane" => lane}, "y").id }
      assert_equal one, queue.poll({"urgent" => true}, "z").id
      assert_equal two, queue.poll({"urgent" => false}, "z").id
    end

    it "matches an Array only to an equal array field, never to a scalar, " \
      "and [] to an empty array alone" do
      scalar = queue.create({"tags" => "x"}, "new").id
      text = queue.create({"tags" => '["x"]'}, "new").id
      array = queue.create({"tags" => ["x"]}, "new").id
      empty = queue.create({"tags" => []}, "new").id
      assert_equal array,
        queue.poll({:state => "new", "tags" => ["x"]}, "taken").id
      assert_nil queue.poll({:state => "new", "tags" => ["x"]}, "taken"),
        "neither the scalar \"x\" nor the string '[\"x\"]'"
      assert_equal empty,
        queue.poll({:state => "new", "tags" => []}, "taken").id
      assert_nil queue.poll({:state => "new", "tags" => []}, "taken"),
        "[] binds nothing of the previous poll"
      assert_equal [scalar, text], [
        queue.poll({"tags" => "x"}, "t").id,
        queue.poll({"tags" => '["x"]'}, "t").id
      ]
    end

    it "refuses a Hash or a non-JSON value for a field " \
      "with a clear ArgumentError, changing nothing" do
      queue.create({"meta" => {"a" => 1}}, "new")
      [{"a" => 1}, [{"a" => 1}], Object.new, Time.at(0)].each do |value|
        error = assert_raises(ArgumentError) do
          queue.poll({"meta" => value}, "taken")
        end
        assert_match(
          /\Apoll matches payload field "meta" against nil, true, false, \
a number, a String, a Symbol or an Array of these \(got /,
          error.message
        )
      end
      assert_equal "new", queue.get(1).state
    end

    it "takes the oldest job of any state with an empty query" do
      first = queue.create({}, "a").id
      queue.create({}, "b")
      assert_equal first, queue.poll({}, "c").id
    end

    it "refuses field names that are not plain words" do
      queue.create({"a-b" => 1}, "new")
      ["a-b", "a') OR 1=1 --", "$.x", ""].each do |name|
        assert_raises(ArgumentError) { queue.poll({name => 1}, "taken") }
      end
      assert_equal "new", queue.get(1).state
    end

    # jobq's poll is meant as a scheduler's inner loop: taking the oldest job must not sort every waiting job. The
    # median of 40 polls with 20,000 jobs waiting is compared with 200 waiting; a poll that sorts is about 30 times
    # slower there, an indexed one about as fast.
    it "takes the oldest job without sorting the whole queue: " \
      "about as fast with 20,000 jobs waiting as with 200" do
      timings = [200, 20_000].map do |waiting|
        memory = open_queue(":memory:")
        memory.transaction do
          waiting.times do |n|
            memory.create({"n" => n, "msg" => "x" * 200}, "new")
          end
        end
        Array.new(40) do
          started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          memory.poll({state: "new"}, "taken")
          Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
        end.sort[20]
      end
      assert_operator timings.last, :<, timings.first * 5,
        format(
          "a poll took %.3f ms with 200 jobs waiting, %.3f ms with 20,000",
          *timings.map { |time| time * 1000 }
        )
    end

    it "never hands one job to two threads polling the same file, " \
      "each on a connection of its own" do
      count = 1_000
      ids = Array.new(count) { |n| queue.create({"n" => n}, "new").id }
      ready = Queue.new
      go = Queue.new
      threads = Array.new(4) do |index|
        Thread.new do
          own = Jiggler::JobQueue.new(path)
          taken = []
          ready << index
          go.pop # every thread polls from the same moment
          while (job = own.poll({state: "new"}, "taken:#{index}"))
            taken << job.id
            # lets the other threads poll in between: one thread's poll is quick enough to take them all
            Thread.pass
          end
          own.close
          taken
        end
      end
      4.times { ready.pop }
      4.times { go << true }
      taken = threads.map do |thread|
        thread.join(30)&.value or
          flunk("a polling thread did not finish within 30 s")
      end
      assert_equal ids.sort, taken.flatten.sort, "every job polled exactly once"
      assert taken.all?(&:any?),
        "every thread should have polled jobs, in turn with the others " \
        "(per thread: #{taken.map(&:size)})"
      taken.each_with_index do |list, index|
        assert_equal list.sort, queue.db.execute(
          "SELECT id FROM jobs WHERE state = ?",
          ["taken:#{index}"]
        ).flatten.sort
      end
    end

    it "never hands one job to two processes polling the same file at once" do
      count = 3_000
      ids = Array.new(count) { |n| queue.create({"n" => n}, "new").id }
      children = Array.new(3) do |index|
        spawn_ruby(JobQueueChildren::POLLER, path, path("taken-#{index}"))
      end
      children.each { |child| assert_equal "ready\n", read_line(child) }
      children.each { |child| child.go.puts("go") }
      children.each do |child|
        assert_equal 0, wait_exit(child, timeout: 40).exitstatus,
          File.read(child.log)
      end

      taken = children.each_index.map do |index|
        File.read(path("taken-#{index}")).split.map(&:to_i)
      end
      assert_equal ids.sort, taken.flatten.sort,
        "every job polled exactly once (per process: #{taken.map(&:size)})"
      children.zip(taken) do |child, list|
        assert_equal list.sort,
          queue.db.execute(
            "SELECT id FROM jobs WHERE state = ?",
            ["taken:#{child.pid}"]
          ).flatten.sort,
          "the jobs a process got are the ones the file says it took"
      end
      assert_operator taken.count(&:any?), :>=, 2,
        "the processes should have polled concurrently " \
        "(per process: #{taken.map(&:size)})"
    end
  end

  describe "cas_state" do
    it "moves a job only from the expected state, " \
      "returning it as it is now, or nil" do
      id = queue.create({}, "new").id
      moved = queue.cas_state(id, "new", "working")
      assert_equal [id, "working"], [moved.id, moved.state]
      assert_equal moved, queue.get(id)
      assert_nil queue.cas_state(id, "new", "other")
      assert_equal "working", queue.get(id).state
      assert_equal "done", queue.cas_state(id, :working, :done).state
      assert_equal "done", queue.get(id).state
      assert_nil queue.cas_state(id + 1, "new", "working"),
        "an unknown id does not move"
    end

    it "moves a job created without a state from nil" do
      id = queue.create({}).id
      assert_nil queue.cas_state(id, "new", "working")
      assert_equal "working", queue.cas_state(id, nil, "working").state
    end

    # The contenders all start while another connection holds the file's write lock, and are all waiting for it when
    # it is let go, so they race for the job at the same moment rather than one after the other.
    it "lets exactly one of many racing connections win" do
      id = queue.create({}, "new").id
      contenders = Array.new(4) { open_queue }
      holder = SQLite3::Database.new(path)
      holder.execute("BEGIN IMMEDIATE")
      threads = contenders.each_with_index.map do |contender, index|
        Thread.new { contender.cas_state(id, "new", "won:#{index}") }
      end
      wait_for(message: "every contender to wait for the lock") do
        threads.all? { |thread| thread.status == "sleep" }
      end
      holder.execute("COMMIT")
      results = threads.map(&:value)
      assert_equal 1, results.compact.size
      winner = results.index { |job| job }
      assert_equal "won:#{winner}", results[winner].state
      assert_equal "won:#{winner}", queue.get(id).state
    ensure
      holder&.close
    end
  end

  describe "JSON states" do
    it "stores any JSON value as a state and gives it back as it went in" do
      states = [
        ["assigned", 1],
        {"step" => 2},
        42,
        1.5,
        true,
        false,
        "",
        ["nested", {"a" => [nil, {"b" => "c"}]}],
        {}
      ]
      ids = states.map { |state| queue.create({}, state).id }
      assert_equal states, ids.map { |id| queue.get(id).state }
      reopened = open_queue
      assert_equal states, ids.map { |id| reopened.get(id).state }
    end

    it "compares states as JSON in cas_state and poll" do
      id = queue.create({}, ["state", 2]).id
      assert_nil queue.cas_state(id, ["state", 1], ["state", 3])
      assert_nil queue.cas_state(id, "[\"state\",2]", ["state", 3]),
        "a String is not the Array its text spells"
      assert_nil queue.cas_state(id, ["state", 2.0], ["state", 3]),
        "2.0 is another JSON number than 2"
      assert_equal(
        {"step" => 2, "by" => "me"},
        queue.cas_state(id, ["state", 2], {"step" => 2, "by" => "me"}).state
      )
      assert_equal id,
        queue.cas_state(id, {"by" => "me", "step" => 2}, [1]).id,
        "object keys compare in any order"
      assert_equal id, queue.poll({state: [1]}, {"done" => true}).id
      assert_nil queue.poll({state: [1]}, "x")
      assert_equal [{"done" => true}], [queue.get(id).state]
    end

    it "never takes a string state for a JSON value that looks the same, " \
      "nor the other way round" do
      text = queue.create({}, "5").id
      number = queue.create({}, 5).id
      list = queue.create({}, ["queued"]).id
      queue.create({}, "queued")
      assert_equal [text, number], [
        queue.poll({state: "5"}, "a").id,
        queue.poll({state: 5}, "a").id
      ]
      assert_equal list, queue.poll({state: ["queued"]}, "b").id
      assert_equal %w[queued], queue.db.execute(
        "SELECT state FROM jobs WHERE state = 'queued'"
      ).flatten
    end

    it "refuses a state that is not JSON, before writing anything" do
      [Time.now, Object.new, Float::NAN, {"a" => 1r}].each do |state|
        error = assert_raises(ArgumentError) { queue.create({}, state) }
        assert_match(/state must be a JSON value/, error.message)
      end
      id = queue.create({}, "new").id
      assert_raises(ArgumentError) { queue.poll({state: "new"}, Object.new) }
      assert_raises(ArgumentError) do
        queue.cas_state(id, "new", Float::INFINITY)
      end
      assert_equal [[id, "new"]], queue.db.execute("SELECT id, state FROM jobs")
      assert_equal 1, queue.db.get_first_value("SELECT count(*) FROM events")
    end
  end

  describe "the log" do
    it "records creation, every state change by poll and cas_state, " \
      "and user events, in order" do
      id = queue.create({"n" => 1}, "new").id
      queue.append_event(id, {"note" => "queued by test"})
      queue.poll({state: "new"}, ["working", 7])
      queue.cas_state(id, ["working", 7], "done")
      queue.cas_state(id, "new", "ignored")
      assert_equal [
        created("new"),
        {"note" => "queued by test"},
        {
          "type" => "job_state_advanced",
          "old" => "new",
          "new" => ["working", 7]
        },
        {
          "type" => "job_state_advanced",
          "old" => ["working", 7],
          "new" => "done"
        }
      ], queue.events(id).map(&:last)
    end

    it "appends a user event, returning the job as it is now, " \
      "with one more event at the end and a later modified" do
      job = queue.create("a basic payload")
      later = queue.append_event(job.id, "some user-defined event")
      assert_equal [job.id, job.state, job.payload],
        [later.id, later.state, later.payload]
      assert_equal job.events, later.events[0...-1]
      assert_equal "some user-defined event", later.events.last.last
      assert_operator later.modified, :>, job.modified
      assert_nil queue.append_event(job.id + 1, "nobody"),
        "an unknown id gets no event"
    end
  end

  describe "poll order" do
    it "takes the least recently modified matching job first, " \
      "not the lowest id" do
      first, second, third =
        Array.new(3) { |n| queue.create({"n" => n}, "new").id }
      queue.append_event(first, "touched")
      queue.cas_state(second, "new", "new")
      assert_equal [third, first, second],
        Array.new(3) { queue.poll({state: "new"}, "taken").id }
    end

    it "puts a polled job behind the others of its state" do
      ids = Array.new(3) { queue.create({}, "ready").id }
      assert_equal ids + ids,
        Array.new(6) { queue.poll({state: "ready"}, "ready").id }
    end

    it "takes any job with a nil query" do
      id = queue.create({}, "x").id
      assert_equal id, queue.poll(nil, "y").id
    end

    it "refuses a query that is neither a Hash nor nil, " \
      "naming what it accepts" do
      queue.create({}, "new")
      ["true", "state = 'new'", [:state, "new"], 1].each do |query|
        error = assert_raises(ArgumentError) { queue.poll(query, "taken") }
        assert_includes error.message,
          "poll's query must be a Hash of state: and payload fields"
        assert_includes error.message, "or nil for any job"
      end
      assert_equal "new", queue.get(1).state
    end
  end

  describe "events" do
    it "keeps each job's events in the order they were appended, " \
      "with their times" do
      id = queue.create({}, "new").id
      other = queue.create({}, "new").id
      before = Time.now.to_f
      events = [
        "started",
        {"fetched" => 200},
        42,
        ["a", {"b" => nil}],
        nil,
        "done"
      ]
      events.each_with_index do |event, index|
        queue.append_event(id, event)
        queue.append_event(other, "other-#{index}")
      end
      job = queue.get(id)
      assert_equal [created("new"), *events], job.events.map(&:last)
      assert_equal job.events, queue.events(id)
      times = job.events.map(&:first)
      assert_equal times.sort, times
      assert times.all? { |time|
        time.is_a?(Float) && time >= before - 1 && time <= Time.now.to_f + 1
      }
      assert_equal [
        created("new"),
        *Array.new(6) { |index| "other-#{index}" }
      ], queue.events(other).map(&:last)
    end

    it "keeps the order of events appended by several processes' connections" do
      id = queue.create({}, "new").id
      writers = Array.new(3) { open_queue }
      50.times { |n| writers[n % 3].append_event(id, n) }
      assert_equal (0...50).to_a, queue.events(id).map(&:last).drop(1)
    end
  end

  # jobq's own tests, as a jobq user would port them: the same calls on an in-memory queue, the same checks.
  describe "a program written for jobq" do
    let(:db) { open_queue(":memory:") }
    let(:payload) { "a basic payload" }

    it "create does the thing" do
      j = db.create(payload)
      assert_kind_of Jiggler::JobQueue::Job, j
      assert_equal [1, payload], [j.id, j.payload]
    end

    it "get after create returns the same value" do
      j = db.create(payload)
      assert_equal j, db.get(j.id)
    end

    it "polls the oldest first" do
      j1 = db.create("payload 1")
      db.create("payload 2")
      db.create("payload 3")
      j = db.poll(nil, ["assigned"])
      assert_equal [j1.id, ["assigned"]], [j.id, j.state]
    end

    it "polls nothing when nothing matches" do
      db.create("payload 1")
      assert_nil db.poll({state: "other"}, ["assigned"])
    end

    it "appends an event, keeping the rest of the job" do
      j = db.create(payload)
      j_prime = db.append_event(j.id, "some user-defined event")
      refute_equal j, j_prime
      assert_equal [j.id, j.state], [j_prime.id, j_prime.state]
      assert_operator j_prime.modified, :>, j.modified
      assert_equal j.events, j_prime.events[0...-1]
    end

    it "CASes a job from one state to the next" do
      j = db.create("job2", ["state", 2])
      j_prime = db.cas_state(j.id, ["state", 2], ["state", 3])
      assert_kind_of Jiggler::JobQueue::Job, j_prime
      assert_equal [j.id, ["state", 3]], [j_prime.id, j_prime.state]
      assert_operator j_prime.modified, :>, j.modified
      assert_equal j.events, j_prime.events[0...-1]
    end

    it "fails a CAS from a stale state" do
      j = db.create("job2", ["state", 2])
      assert_nil db.cas_state(j.id, ["state", 1], ["state", 2])
    end
  end

  describe "durability" do
    %w[normal full].each do |synchronous|
      it "keeps every committed job when the process that wrote them " \
        "is killed with SIGKILL (synchronous #{synchronous})" do
        child = spawn_ruby(JobQueueChildren::CRASHER, path, synchronous)
        ids = read_line(child).split(",").map(&:to_i)
        status = wait_exit(child)
        assert_equal "KILL", Signal.signame(status.termsig)
        assert File.size?("#{path}-wal"),
          "the jobs should be in the write-ahead log, not yet checkpointed"

        assert_equal 50, ids.size
        assert_equal Array.new(50) { |n| {"n" => n} },
          ids.map { |id| queue.get(id).payload }
        assert_equal [created("new"), "committed"],
          queue.events(ids.last).map(&:last)
        assert_equal ids.first, queue.poll({state: "new"}, "taken").id
      end
    end
  end
end
