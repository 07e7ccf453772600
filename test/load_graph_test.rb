# frozen_string_literal: true

require "test_helper"
require "tsort"
require "open3"

# The parts of lib/ load in one direction: a part is a top-level file of lib/jiggler with the folder of the same name
# (config.rb and config/), or a folder beside lib/jiggler (active_job/, generators/). A `require_relative`, or a
# `require "jiggler/..."`, from one part to another is an edge; a cycle of edges would make what loads first
# depend on who asked first.
describe "lib's load graph" do
  lib = File.expand_path("../lib", __dir__)
  part = lambda do |path|
    relative = path.delete_prefix("#{lib}/")
    unless relative == "jiggler.rb"
      relative = relative.delete_prefix("jiggler/")
    end
    relative.split("/").first.delete_suffix(".rb")
  end
  edges = Hash.new { |hash, key| hash[key] = [] }
  Dir["#{lib}/**/*.rb"].each do |file|
    from = part.call(file)
    edges[from] # every part is a node, required or not
    source = File.read(file)
    relative = source.scan(/^\s*require_relative\s+"([^"]+)"/).flatten
      .map { |path| File.expand_path(path, File.dirname(file)) }
    absolute = source.scan(/^\s*require\s+"(jiggler(?:\/[^"]+)?)"/).flatten
      .map { |path| File.join(lib, path) }
    (relative + absolute).each do |required|
      to = part.call(required.end_with?(".rb") ? required : "#{required}.rb")
      edges[from] << to unless to == from
    end
  end
  graph = Object.new
  graph.define_singleton_method(:tsort_each_node) do |&block|
    edges.each_key(&block)
  end
  graph.define_singleton_method(:tsort_each_child) do |node, &block|
    edges[node].each(&block)
  end
  graph.extend(TSort)

  it "has no cycle between parts" do
    cycles = graph.strongly_connected_components
      .select { |component| component.size > 1 }
    described = cycles.map do |cycle|
      cycle.map { |node| "#{node} -> #{(edges[node] & cycle).join(", ")}" }
        .join("; ")
    end
    assert_empty described,
      "parts that require each other, directly or through others"
  end

  # A file jiggler autoloads may also be required by name (`require "jiggler/job_queue"`), after jiggler's own.
  it "loads each file jiggler autoloads by a require of its own, " \
    "without a warning" do
    script = <<~RUBY
      require "jiggler"
      [Jiggler, Jiggler::Store].each do |mod|
        mod.constants.filter_map { |name| mod.autoload?(name) }
          .each { |path| require path.delete_prefix("#{lib}/") }
      end
    RUBY
    _, errors, status = Open3.capture3(
      RbConfig.ruby, "-w", "-I", lib, "-e", script
    )
    assert status.success?, errors
    assert_empty errors
  end

  it "sees the parts and their edges" do
    assert_operator edges.size, :>=, 30
    assert_includes edges["config"], "queue_name"
    assert_includes edges["jiggler"], "rails"
  end
end
