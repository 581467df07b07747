declare const tools: {
  crm: {
    /** Find customers by name. Matches prefixes; case-insensitive. */
    find_customer(args: CrmFindCustomerInput): Promise<CrmFindCustomerOutput>;
  };
  /** Checks the service. */
  ping(args?: Record<string, unknown>): Promise<unknown>;
};

interface CrmFindCustomerInput {
  /** Most results. @minimum 1 @maximum 50 @default 10 */
  limit?: number;
  /** Name or prefix. @minLength 1 */
  name: string;
}

type CrmFindCustomerOutput = CrmFindCustomerCustomer[];

/** A customer. As stored. */
interface CrmFindCustomerCustomer {
  id: string;
  /** @format date */
  since?: string;
}
