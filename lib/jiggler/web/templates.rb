# frozen_string_literal: true

require "erubi"

module Jiggler
  class Web
    # The ERB views of views/, compiled once when the app loads. Output is HTML-escaped by default (`<%= %>`);
    # `<%== %>` writes raw HTML and is used only for markup the app built itself. Each view becomes a Proc that an
    # Action runs with `instance_exec`, so views read the action's instance variables and call its methods.
    module Templates
      DIRECTORY = ::File.expand_path("views", __dir__)

      # Compiles one view.
      # @returns [Proc]
      def self.compile(path)
        source = Erubi::Engine.new(::File.read(path), escape: true).src
        # our own views, once; errors name the view file
        eval("proc { #{source} }", empty_binding, path, 1) # rubocop:disable Security/Eval, Style/EvalWithLocation
      end

      # A binding with no local variables, so that views see only the action they run on.
      def self.empty_binding = binding
      private_class_method :empty_binding

      ALL = Dir[::File.join(DIRECTORY, "*.erb")].to_h do |path|
        [::File.basename(path, ".erb").to_sym, compile(path)]
      end.freeze

      # @parameter name [Symbol] the view's file name without ".erb".
      # @returns [Proc]
      # @raises [KeyError] for an unknown view.
      def self.fetch(name) = ALL.fetch(name)
    end
  end
end
