# frozen_string_literal: true

# Adds to an account's balance: an Active Record argument (a GlobalID) and a keyword.
class DepositJob < ApplicationJob
  queue_as :default

  def perform(account, amount:)
    account.increment!(:balance, amount)
  end
end
