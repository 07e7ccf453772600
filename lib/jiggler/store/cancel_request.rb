# frozen_string_literal: true

module Jiggler
  module Store
    # A request to cancel a job (Jiggler.cancel): its `jid`, who asked (`by`, a String) and when (`at`, epoch seconds).
    CancelRequest = Struct.new(:jid, :by, :at, keyword_init: true)
  end
end
