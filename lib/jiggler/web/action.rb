# frozen_string_literal: true

require "securerandom"
require "rack/request"
require "rack/utils"
require_relative "../payload"
require_relative "csrf"
require_relative "format"
require_relative "templates"
require_relative "assets"

module Jiggler
  class Web
    # One request being answered. A route's block runs on it with `instance_exec`: it reads `url_params` and
    # `route_params`, uses `store`, and ends with `erb`, `json` or `redirect`, each of which gives the response;
    # `halt` ends early with any status. Views run on the action too, so they see its instance variables and the
    # methods below.
    class Action
      include Format

      attr_reader :env, :request, :route_params, :store, :csrf

      # @parameter env [Hash] the Rack environment; the store is at env["jiggler.store"].
      # @parameter route_params [Hash(String, String)] the route's `:name` segments.
      def initialize(env, route_params)
        @env = env
        @request = ::Rack::Request.new(env)
        @route_params = route_params
        @store = env[STORE]
        @csrf = CSRF.new(@request)
      end

      # The query string and form fields.
      # @returns [Hash(String, String | Array | Hash)]
      def url_params = @url_params ||= request.params

      # One parameter as a UTF-8 String ("" when missing or not a String; bytes that are not UTF-8 become U+FFFD).
      def param(name)
        value = url_params[name]
        value.is_a?(String) ?
          value.dup.force_encoding(Encoding::UTF_8).scrub :
          ""
      end

      # The page number asked for with `?page=`, at least 1.
      def page
        (Integer(param("page"), 10, exception: false) || 1).clamp(1, 1_000_000)
      end

      # Ends the request with a 303 to a page of the app (so a reloaded page never repeats a POST); takes what `url`
      # takes.
      def redirect(path, *segments, **query)
        throw(:halt, [303, {"location" => url(path, *segments, **query)}, []])
      end

      # Ends the request with the 404 page.
      def not_found = throw(:halt, erb(:not_found, status: 404))

      # Ends the request with a status and a short plain-text body.
      def halt(status, text = ::Rack::Utils::HTTP_STATUS_CODES.fetch(status))
        throw(
          :halt,
          [status, {"content-type" => "text/plain; charset=utf-8"}, [text]]
        )
      end

      # Renders a view inside the layout.
      # @parameter view [Symbol] the view's name in views/.
      # @parameter locals [Hash(Symbol, Object)] set as instance variables for the view.
      # @returns [Array] the response.
      def erb(view, status: 200, locals: {})
        locals.each { |name, value| instance_variable_set(:"@#{name}", value) }
        @content = render(view)
        [
          status,
          {"content-type" => "text/html; charset=utf-8"},
          [render(:layout)]
        ]
      end

      # @returns [Array] a JSON response of a value made of JSON types.
      def json(value)
        [
          200,
          {"content-type" => "application/json; charset=utf-8"},
          [Payload.dump(value)]
        ]
      end

      # Renders a view (or a partial) alone. @returns [String]
      def render(view) = instance_exec(&Templates.fetch(view))

      # The absolute path of a page of the app.
      # @parameter path [String] e.g. "/queues"; segments given separately are escaped (see Router.segment), and so
      #   is the query.
      def url(path, *segments, **query)
        location = [
          mount_path.chomp("/") + path,
          *segments.map { |segment| Router.segment(segment.to_s) }
        ].join("/")
        query.empty? ?
          location :
          "#{location}?" \
            "#{::Rack::Utils.build_query(query.transform_keys(&:to_s))}"
      end

      # The versioned path of a file of assets/.
      def asset_url(name) = "#{url("/assets", name)}?#{Assets.version(name)}"

      # The path the app is mounted at, ending with "/".
      def mount_path = "#{env["SCRIPT_NAME"]}/"

      # A fresh random value for this response's Content-Security-Policy, put on the script tag.
      def nonce = @nonce ||= SecureRandom.base64(18)

      # The hidden field every form carries. @returns [String] HTML.
      def csrf_field
        %(<input type="hidden" name="#{CSRF::FIELD}" value="#{csrf.token}">)
      end
    end
  end
end
