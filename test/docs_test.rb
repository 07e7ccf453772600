# frozen_string_literal: true

require "test_helper"
require "json"
require "open3"
require "rbconfig"
require "tmpdir"

# The README and the guides in docs/ are the API: their Ruby examples must run as written. Each file's ```ruby blocks
# run in order, as one script, in a fresh process, against a real store (```rb, ```sh and ```yaml blocks are shown,
# not run; a ```ruby block that starts with "# Gemfile" is skipped).
describe "the README and the guides" do
  root = File.expand_path("..", __dir__)

  # The fewest examples each file may hold: a file that loses some fails here. A new guide is listed here too.
  minimums = {
    "README.md" => 1,
    "docs/batches-and-workflows.md" => 3,
    "docs/configuration.md" => 3,
    "docs/dashboard.md" => 1,
    "docs/development.md" => 0,
    "docs/flow-control.md" => 3,
    "docs/jobs.md" => 4,
    "docs/long-jobs.md" => 1,
    "docs/operations.md" => 2,
    "docs/rails.md" => 0,
    "docs/recurring.md" => 1,
    "docs/reliability.md" => 0,
    "docs/stores.md" => 1,
    "docs/testing.md" => 1,
    "docs/upgrading.md" => 2
  }
  # The store each file's examples run against: the suite's Redis, unless named here.
  stores = {"docs/stores.md" => :sqlite}

  # [code, line of its first line] for each block to run.
  examples = lambda do |file|
    lines = File.readlines(File.join(root, file))
    blocks = []
    index = 0
    while index < lines.size
      fence = lines[index][/\A```(\w*)\s*\z/, 1]
      if fence.nil?
        index += 1
        next
      end
      finish = (index + 1...lines.size).find do |at|
        lines[at].start_with?("```")
      end or raise "#{file}:#{index + 1}: an unclosed code block"
      code = lines[index + 1...finish].join
      if fence == "ruby" && !code.start_with?("# Gemfile")
        blocks << [code, index + 2]
      end
      index = finish + 1
    end
    blocks
  end

  # Runs each block with its own file name and line in backtraces, sharing one binding (and its local variables).
  runner = "JSON.parse($stdin.read).each { |code, file, line| " \
    "eval(code, TOPLEVEL_BINDING, file, line) }"

  files = ["README.md", *Dir.glob("docs/*.md", base: root).sort]
  ran = {}

  it "lists every guide with its minimum count" do
    assert_equal files.sort, minimums.keys.sort
  end

  it "links only to files and headings that exist" do
    # GitHub's anchors
    slug = ->(heading) {
      heading.strip.downcase.gsub(/[^\p{L}\p{N}\s_-]/, "").tr(" ", "-")
    }
    prose = files.to_h do |file|
      [file, File.read(File.join(root, file)).gsub(/^```.*?^```/m, "")]
    end
    anchors = prose.transform_values do |text|
      text.scan(/^#+ (.+)$/).flatten.map(&slug)
    end
    broken = prose.flat_map do |file, text|
      text.scan(/\]\(([^)\s]+)\)/).flatten
        .reject { |link| link.match?(/\A[a-z]+:/) }
        .filter_map do |link|
          path, anchor = link.split("#", 2)
          target = path.empty? ? file :
            File.expand_path(path, File.join(root, File.dirname(file)))
              .delete_prefix("#{root}/")
          next "#{file}: #{link}" unless File.exist?(File.join(root, target))
          if anchor && !anchors.fetch(target, []).include?(anchor)
            "#{file}: #{link}"
          end
        end
    end
    assert_empty broken
  end

  files.each do |file|
    it "runs every Ruby example of #{file}, in order" do
      blocks = examples.call(file)
      assert_operator blocks.size, :>=, minimums.fetch(file, 1),
        "#{file} lost Ruby examples"
      ran[file] = blocks.size
      next if blocks.empty?

      # Each file starts from an empty store, as a reader's would be: the default namespace's keys (all under its hash
      # tag) are deleted from the suite's Redis, and an SQLite file is new.
      redis = RedisClient.new(url: RedisServer.instance.url)
      stale = redis.call("KEYS", "{jiggler}*")
      redis.call("DEL", *stale) unless stale.empty?
      redis.close
      Dir.mktmpdir("jiggler-docs") do |dir|
        env = {
          "REDIS_URL" => RedisServer.instance.url,
          "JIGGLER_DATABASE_URL" => nil
        }
        if stores[file] == :sqlite
          env = env.merge(
            "REDIS_URL" => nil,
            "JIGGLER_SQLITE_PATH" => File.join(dir, "jiggler.sqlite3")
          )
        end
        input = JSON.generate(blocks.map { |code, line| [code, file, line] })
        output, status = Open3.capture2e(
          env,
          RbConfig.ruby, "-I", File.join(root, "lib"), "-rjson", "-e", runner,
          stdin_data: input,
          chdir: dir
        )
        assert status.success?, "#{file}: its examples failed:\n#{output}"
        refute_match(
          /Error|warning/,
          output,
          "#{file}: its examples printed an error or a warning"
        )
      end
    end
  end

  Minitest.after_run do
    next if ran.empty?
    puts "Ruby examples run, per file:"
    ran.sort.each { |file, count| puts format("  %-32s %3d", file, count) }
    puts format("  %-32s %3d", "in all (#{ran.size} files)", ran.values.sum)
  end
end
