# frozen_string_literal: true

require "fileutils"
require "tmpdir"
require "webrick"
require "rackup/handler/webrick"
require "jiggler/web"

# Headless Chromium (Debian's `chromium`, driven with Ferrum) on the dashboard, which WEBrick serves on a free
# loopback port from a thread of the test process, mounted at /jiggler. The app uses `Jiggler.store`, so each test
# sees its own namespace. One browser and one server serve every test of the process.
module BrowserSession
  # JIGGLER_CHROMIUM, else `chromium` on PATH: the lookup bin/test makes (`command -v chromium`) before it installs one.
  CHROMIUM = ENV["JIGGLER_CHROMIUM"] ||
    ENV["PATH"].to_s.split(File::PATH_SEPARATOR)
      .map { |dir| File.join(dir, "chromium") }
      .find { |path| File.executable?(path) }
  SCREENSHOTS = File.expand_path("../../tmp/screenshots", __dir__)
  MOUNT = "/jiggler"
  WINDOW = [1280, 900].freeze
  FLAGS = %w[
    headless no-sandbox disable-gpu no-first-run disable-background-networking
    disable-component-update disable-sync
  ].to_h { |flag| [flag, nil] }.freeze

  class << self
    # The browser, started on first use; nil (with the reason in `failure`) when Chromium cannot be started.
    def browser
      return @browser if @browser || @failure
      require "ferrum"
      unless CHROMIUM
        raise "no chromium on PATH " \
          "(bin/test installs Debian's chromium package)"
      end
      unless File.executable?(CHROMIUM)
        raise "#{CHROMIUM} is not an executable (JIGGLER_CHROMIUM)"
      end
      @browser = Ferrum::Browser.new(
        browser_path: CHROMIUM,
        headless: true,
        window_size: WINDOW,
        timeout: 15,
        process_timeout: 30,
        browser_options: FLAGS.merge(
          "user-data-dir" => Dir.mktmpdir("jiggler-chromium")
        )
      )
    rescue => error
      @failure = "#{error.class}: #{error.message.lines.first&.strip}"
      nil
    end

    # A new tab, at the window's first size: tabs share the window, so a test that narrowed it to a phone's width
    # would leave the next test's buttons out of view, where a click lands on nothing. A browser found dead (its
    # process gone, or its connection closed) since the last test is replaced once, with a warning that says how it
    # ended: the dashboard is under test here, not Chromium's lifetime.
    def create_page
      sized(browser.create_page)
    rescue Ferrum::DeadBrowserError => error
      warn "Chromium was found dead (#{error.message}; #{process_end}); " \
        "starting another"
      quit_quietly
      sized(browser&.create_page || raise(error))
    end

    def sized(page)
      width, height = WINDOW
      page.resize(width: width, height: height)
      page
    end

    def quit_quietly
      @browser&.quit
    rescue Ferrum::Error, SystemCallError
      nil
    ensure
      @browser = nil
    end

    attr_reader :failure

    # How Chromium's process ended, as far as this process (its parent) can tell.
    def process_end
      pid = @browser&.process&.pid
      return "no process" unless pid
      _, status = Process.wait2(pid, Process::WNOHANG)
      status ? status.to_s : "process #{pid} still running"
    rescue Errno::ECHILD
      "process #{pid} already reaped"
    end

    # The dashboard's URL, starting the server on first use.
    def url
      @url ||= begin
        server = WEBrick::HTTPServer.new(
          BindAddress: "127.0.0.1",
          Port: 0,
          Logger: WEBrick::Log.new(File::NULL),
          AccessLog: []
        )
        server.mount(MOUNT, Rackup::Handler::WEBrick, Jiggler::Web.new)
        Thread.new { server.start }.name = "jiggler.test.web"
        @server = server
        "http://127.0.0.1:#{server.listeners.first.addr[1]}#{MOUNT}"
      end
    end

    def stop
      @browser&.quit
      @server&.shutdown
    end
  end

  # Without a browser that starts, the test fails on CI (CI set) and is skipped elsewhere.
  def setup
    super
    return if BrowserSession.browser
    message = "Chromium cannot be started: #{BrowserSession.failure}"
    ENV["CI"] ? flunk(message) : skip(message)
  end

  def teardown
    @page&.close
    super
  end

  # A fresh tab.
  def page = @page ||= BrowserSession.create_page

  # Opens a page of the dashboard.
  def visit(path) = page.go_to("#{BrowserSession.url}#{path}")

  # Waits for a condition that reads the page, which may be between two documents meanwhile. A timeout says what the
  # tab shows and what it last asked the dashboard.
  def wait_in_browser(message, timeout: 10)
    wait_for(timeout: timeout, message: message) do
      yield
    rescue Ferrum::Error
      nil
    end
  rescue Minitest::Assertion => error
    raise error, "#{error.message}\n#{tab_state}"
  end

  # The tab's address, the start of its main text and its last requests.
  def tab_state
    requests = page.network.traffic.last(6).map do |exchange|
      "#{exchange.request&.method} #{exchange.url} => " \
        "#{exchange.response&.status || exchange.error&.error_text || "-"}"
    end
    shown = text("main").gsub(/\s+/, " ")[0, 300]
    "the tab shows #{page.current_url}: #{shown.inspect}; " \
      "its last requests: #{requests.join(", ")}"
  rescue Ferrum::Error => error
    "the tab cannot be read: #{error.class}: #{error.message}"
  end

  def text(selector) = page.at_css(selector)&.text.to_s.strip

  # Saves a screenshot of the whole page as tmp/screenshots/NAME.png.
  def screenshot(name)
    FileUtils.mkdir_p(SCREENSHOTS)
    path = File.join(SCREENSHOTS, "#{name}.png")
    page.screenshot(path: path, full: true)
    path
  end
end

Minitest.after_run { BrowserSession.stop }
