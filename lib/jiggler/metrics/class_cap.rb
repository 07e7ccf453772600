# frozen_string_literal: true

require_relative "counts"

module Jiggler
  module Metrics
    # The bounds of per-class metrics, so that any number of job classes (20,000 made `/metrics` 37 MB and the
    # Metrics page take 25 s) cannot grow them without limit. A store tracks at most LIMIT classes at once: runs of
    # any other class, or of a class named by more than NAME_MAX characters, are counted under OTHER. A class that
    # has not run for IDLE seconds leaves the totals, giving its place to another. With these bounds the per-class
    # part of `/metrics` stays under EXPOSITION_MAX bytes (about 2.7 KB per class with names of 40 characters), and
    # `fold` applies them again where metrics are read, to what was stored before them or by another client.
    module ClassCap
      # Classes tracked at once, besides OTHER.
      LIMIT = 200
      # The longest class name tracked under its own name.
      NAME_MAX = 120
      # Seconds a tracked class is kept without a run.
      IDLE = 86_400
      # Where the runs of classes past LIMIT are counted.
      OTHER = "(other)"
      # The most bytes the per-class part of `/metrics` takes.
      EXPOSITION_MAX = 2_000_000

      module_function

      # Whether a class may be tracked under its own name.
      # @parameter name [String]
      def nameable?(name)
        name.is_a?(String) && name.length <= NAME_MAX && name != OTHER
      end

      # Per-class counts within the bounds: the LIMIT classes with the most runs, the rest (and names past NAME_MAX)
      # added up under OTHER.
      # @parameter classes [Hash(String, Counts)]
      # @returns [Hash(String, Counts)]
      def fold(classes)
        named, others = classes.partition { |name, _| nameable?(name) }
        named = named.sort_by { |name, counts| [-counts.runs, name] }
        others += named.drop(LIMIT)
        kept = named.first(LIMIT).to_h
        return kept if others.empty?
        kept.merge(
          OTHER => others.each_with_object(Counts.zero) do |(_, counts), sum|
            sum.add(counts)
          end
        )
      end
    end
  end
end
