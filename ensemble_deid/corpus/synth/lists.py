"""The generator's own word lists (written by hand for this package).

Surrogate PHI comes from two sources only: Faker 40.54.0 (seeded; names,
streets, fictional towns, companies, job titles, user names, domains) and the
lists below. No tagger gazetteer may be built from either source (see
docs/synthetic-corpora.md): a gazetteer copied from the surrogate lists would
rig the benchmark.

Non-PHI lists (drugs, labs, symptoms, relatives, ...) give the notes their
vocabulary and the look-alikes that taggers must learn to leave alone.
"""
from __future__ import annotations

# --- names ------------------------------------------------------------------

# Surnames that are ordinary English words; the same words also occur
# untagged in the notes ("brown urine", "kidney stone", "hope to").
WORD_SURNAMES = (
    "Brown", "Hope", "Young", "White", "Green", "Black", "King", "Rose", "Page",
    "Hill", "Wood", "Stone", "Bell", "Price", "Rich", "Small", "Long", "Short",
    "Love", "Best", "Hunter", "Cook", "Mason", "Banks", "Fields", "Waters",
    "Rivers", "Strong", "Sharp", "Gross", "Moody", "Wise", "Bishop", "Church",
    "Frost", "Snow", "Knight", "Marsh", "Brook", "Lane", "Person", "Cross",
    "Savage", "Walker", "Power", "Gay", "Hale", "Fox", "Swift", "Lamb", "Day",
    "Sweet", "Bond", "Noble", "Good", "Moon", "Fair", "Pain", "Burns", "Sick",
)

# Surnames that are also eponyms of diseases, signs and devices, which occur
# untagged in the notes ("Dr. Graves" vs "Graves' disease", "Foley catheter").
EPONYM_SURNAMES = (
    "Parkinson", "Hodgkin", "Graves", "Addison", "Cushing", "Barrett", "Baker",
    "Wilson", "Huntington", "Foley", "Bruce", "Hashimoto", "Crohn", "Bell",
    "Holter", "Whipple", "Murphy", "Homan", "Romberg", "Nissen",
)

# First names that are words or months ("May", "Will", "Grace").
WORD_FIRST_NAMES = (
    "Hope", "Faith", "Grace", "Joy", "May", "June", "April", "Will", "Bill",
    "Rose", "Iris", "Summer", "Dawn", "Angel", "Sunny", "Art", "Pat", "Gene",
    "Guy", "Frank", "Mark", "Jack", "Rich", "Sandy", "Crystal", "Ginger",
    "Autumn", "Robin", "Carol", "Drew", "Chase", "Hunter", "Lane", "Star",
)

# Untagged uses of the name-like words above, for the look-alike sentences.
WORD_NAME_LOOKALIKES = (
    ("brown", "urine was dark brown"), ("hope", "we hope to titrate"),
    ("young", "a young appearing patient"), ("stone", "history of kidney stone"),
    ("bell", "remote Bell's palsy"), ("gross", "no gross hematuria"),
    ("sharp", "sharp chest pain"), ("long", "long-acting insulin"),
    ("short", "short of breath"), ("small", "small bowel"), ("white", "white count"),
    ("black", "black stools"), ("will", "will follow up"), ("may", "may increase"),
    ("fields", "lung fields clear"), ("frost", "frostbite as a child"),
    ("hunter", "hunter's cap"), ("page", "page on call"), ("rich", "rich diet"),
    ("burns", "burns with urination"), ("pain", "pain 3/10"),
    ("dr", "wears Dr. Scholl's inserts"), ("dr", "drinks Dr Pepper most days"),
    ("dr", "Dr. on call was paged"), ("dr", "covering Dr. aware"),
    ("atkins", "tried the Atkins diet"), ("south beach", "on the South Beach diet"),
    ("foley", "Foley catheter removed"), ("murphy", "negative Murphy's sign"),
    ("homan", "neg Homan's sign"), ("romberg", "Romberg negative"),
    ("whipple", "s/p Whipple procedure"), ("nissen", "s/p Nissen fundoplication"),
    ("wilson", "r/o Wilson's disease"), ("cushing", "no cushingoid features"),
    ("graves", "hx of Graves' disease"), ("parkinson", "FH of Parkinson's"),
    ("may", "May need insulin"), ("march", "gait: marching in place"),
    ("may", "May benefit from statin"), ("will", "Will check lipids"),
)

NAME_TITLES = ("Dr.", "Dr", "DR.", "Doctor")
NAME_SUFFIXES_AFTER = ("MD", "M.D.", "PhD", "NP", "PA-C", "RN", "DO", "LICSW")

# --- places -----------------------------------------------------------------

# Real US cities of New England and the north-east (the 2014 records);
# Faker's fictional towns are mixed in by the generator.
CITIES_NE = (
    "Boston", "Cambridge", "Somerville", "Quincy", "Brockton", "Lowell",
    "Lawrence", "Worcester", "Springfield", "Framingham", "Natick", "Waltham",
    "Newton", "Brookline", "Medford", "Malden", "Revere", "Lynn", "Salem",
    "Peabody", "Beverly", "Gloucester", "Haverhill", "Andover", "Dedham",
    "Milton", "Braintree", "Weymouth", "Plymouth", "Taunton", "Fall River",
    "New Bedford", "Providence", "Pawtucket", "Nashua", "Manchester",
    "Portsmouth", "Hartford", "New Haven", "Burlington", "Concord", "Chelsea",
    "Everett", "Arlington", "Belmont", "Watertown", "Needham", "Wellesley",
    "Marlborough", "Fitchburg", "Leominster", "Pittsfield", "Hyannis",
)

# Cities elsewhere in the US and abroad (the 2016 notes: where patients grew
# up, moved to, studied).
CITIES_WIDE = (
    "New York", "Chicago", "Los Angeles", "Houston", "Phoenix", "Philadelphia",
    "San Antonio", "San Diego", "Dallas", "Austin", "Jacksonville", "Columbus",
    "Charlotte", "Indianapolis", "Seattle", "Denver", "Nashville", "Detroit",
    "Memphis", "Portland", "Baltimore", "Milwaukee", "Albuquerque", "Tucson",
    "Sacramento", "Atlanta", "Miami", "Oakland", "Minneapolis", "Cleveland",
    "Tampa", "Pittsburgh", "Cincinnati", "Buffalo", "Rochester", "Syracuse",
    "Albany", "Orlando", "Savannah", "Richmond", "Raleigh", "Durham",
    "Lexington", "Louisville", "Omaha", "Boise", "Reno", "Anchorage",
    "Honolulu", "San Juan", "Ponce", "Toronto", "Montreal", "London", "Dublin",
    "Lisbon", "Madrid", "Paris", "Rome", "Naples", "Athens", "Kiev", "Moscow",
    "Warsaw", "Krakow", "Berlin", "Hamburg", "Seoul", "Beijing", "Shanghai",
    "Manila", "Hanoi", "Mumbai", "Delhi", "Karachi", "Lagos", "Accra",
    "Nairobi", "Kingston", "Port-au-Prince", "Santo Domingo", "Bogota",
    "Medellin", "Lima", "Quito", "Caracas", "Mexico City", "Guadalajara",
    "San Salvador", "Tegucigalpa", "Havana", "Sao Paulo", "Praia", "Tel Aviv",
)

# Names that are both a city and a state: the type depends on context.
CITY_STATE_AMBIGUOUS = ("New York", "Washington")

STATES = (
    ("Massachusetts", "MA"), ("Rhode Island", "RI"), ("New Hampshire", "NH"),
    ("Connecticut", "CT"), ("Vermont", "VT"), ("Maine", "ME"), ("New York", "NY"),
    ("New Jersey", "NJ"), ("Pennsylvania", "PA"), ("Florida", "FL"),
    ("California", "CA"), ("Texas", "TX"), ("Ohio", "OH"), ("Georgia", "GA"),
    ("Virginia", "VA"), ("North Carolina", "NC"), ("Illinois", "IL"),
    ("Michigan", "MI"), ("Arizona", "AZ"), ("Colorado", "CO"), ("Oregon", "OR"),
    ("Washington", "WA"), ("Maryland", "MD"), ("Tennessee", "TN"),
    ("Louisiana", "LA"), ("Kentucky", "KY"), ("Minnesota", "MN"),
    ("Wisconsin", "WI"), ("Missouri", "MO"), ("Alabama", "AL"),
)

COUNTRIES = (
    "Ireland", "Italy", "Portugal", "Haiti", "Jamaica", "Brazil", "Mexico",
    "Guatemala", "El Salvador", "Honduras", "Colombia", "Peru", "Ecuador",
    "Venezuela", "Cuba", "Puerto Rico", "Dominican Republic", "Cape Verde",
    "Canada", "England", "Scotland", "Germany", "Poland", "Russia", "Ukraine",
    "Greece", "Israel", "Lebanon", "Iran", "Iraq", "Afghanistan", "Pakistan",
    "India", "Bangladesh", "Nepal", "China", "Taiwan", "Korea", "Japan",
    "Vietnam", "Cambodia", "Philippines", "Nigeria", "Ghana", "Kenya",
    "Ethiopia", "Somalia", "Sudan", "Egypt", "Morocco", "Turkey", "France",
    "Spain", "Sweden", "Australia", "Iraq", "Bosnia", "Albania", "Armenia",
)

# Words that build hospital names with Faker surnames and towns.
HOSPITAL_STEMS = (
    "Mercy", "Good Samaritan", "Holy Cross", "Sacred Heart", "Saint Anne's",
    "St. Luke's", "St. Elizabeth's", "St. Vincent", "Bayview", "Riverside",
    "Lakeside", "Hillcrest", "Northfield", "Southgate", "Westbrook", "Eastwood",
    "Fairview", "Greenfield", "Harborview", "Oak Ridge", "Pine Hill",
    "Maple Grove", "Cedar Crest", "Highland", "Valley", "Summit", "Brookside",
    "Kingsbridge", "Whitman", "Garrison", "Ashford", "Clearwater", "Redwood",
)
HOSPITAL_KINDS_2014 = (
    "Hospital", "Medical Center", "General Hospital", "Memorial Hospital",
    "Community Hospital", "Health Center", "Regional Medical Center",
    "Heart Center", "Clinic", "Family Health Center", "Rehabilitation Hospital",
)
HOSPITAL_KINDS_2016 = (
    "Hospital", "Medical Center", "Psychiatric Center", "Behavioral Health",
    "Mental Health Center", "State Hospital", "Recovery Center", "Clinic",
    "Counseling Center", "Treatment Center", "Community Health Center",
    "Detox", "House",
)

DEPARTMENTS = (
    "Cardiology", "Endocrinology", "Diabetes Clinic", "Renal Clinic",
    "Emergency Department", "Cardiac Surgery", "Vascular Surgery",
    "Podiatry", "Ophthalmology", "Nephrology", "Internal Medicine",
    "Anticoagulation Clinic", "Cath Lab", "Wound Clinic",
)
DEPARTMENTS_2016 = (
    "Inpatient Psychiatry", "Outpatient Psychiatry", "Addiction Services",
    "Partial Hospital Program", "Crisis Team", "Psychology", "Child Psychiatry",
    "Dual Diagnosis Program",
)

ROOM_PATTERNS = ("Room ###", "Rm ##?", "Bed #", "###-#", "Ellison ##", "Blake #")

ORGANIZATIONS_2014 = (
    "Weight Watchers", "the YMCA", "Curves", "Meals on Wheels", "Elder Services",
    "the VA", "Medicare", "MassHealth", "Cardiac Rehab Associates",
    "the American Diabetes Association", "Visiting Nurse Association",
    "Senior Center", "Council on Aging",
)
ORG_KINDS = (
    "Inc.", "LLC", "Corporation", "Associates", "Group", "Partners", "& Sons",
    "Services", "Logistics", "Construction", "Bakery", "Auto Body",
    "Landscaping", "Insurance", "Foods", "Systems", "Realty", "Trucking",
)
ORG_GENERIC_2016 = (
    "Home Depot", "Walmart", "Target", "Dunkin Donuts", "Starbucks", "CVS",
    "Walgreens", "Stop & Shop", "Market Basket", "UPS", "FedEx", "Amazon",
    "the MBTA", "the Post Office", "McDonald's", "Burger King", "Best Buy",
    "Verizon", "Comcast", "State Street", "Fidelity", "Raytheon",
    "the Salvation Army", "Goodwill", "Job Corps", "AmeriCorps", "Costco",
    "Staples", "Panera", "Whole Foods", "Trader Joe's", "Dominos", "Shaw's",
)

# Untagged look-alikes of the 2016 slots: the same frames ("was a ...",
# "works at ...", "moved to ...", "attended ...") filled with non-PHI.
NON_PROFESSION_ROLES = (
    "heavy drinker", "good student", "victim of bullying", "caregiver for her mother",
    "loner", "class clown", "stay-at-home parent", "volunteer", "member of a gang",
    "straight-A student", "regular at the bar", "churchgoer", "people pleaser",
    "daily smoker", "social drinker", "patient there", "single parent",
)
# Combined into look-alike roles ("a heavy drinker", "a hard worker"); none
# of the nouns is a profession.
ROLE_ADJECTIVES = (
    "heavy", "good", "quiet", "shy", "angry", "lonely", "hard", "binge", "social",
    "daily", "loyal", "anxious", "popular", "gifted", "picky", "late", "light",
    "chronic", "reluctant", "strong", "poor", "average", "devoted", "weekend",
)
ROLE_NOUNS = (
    "drinker", "smoker", "student", "kid", "worker", "sleeper", "eater", "friend",
    "reader", "gambler", "learner", "bloomer", "child", "person", "talker", "user",
    "member", "fan", "sibling", "parent", "churchgoer", "napper", "spender",
)
PROFESSION_MODIFIERS = (
    "part-time", "night-shift", "per diem", "former", "licensed", "self-employed",
    "retired", "temporary", "senior", "unemployed", "full-time",
)

GENERIC_WORKPLACES = (
    "a restaurant", "a call center", "a nursing home", "a car wash", "a warehouse",
    "a hospital", "a daycare", "a bank", "a hotel", "a construction company",
    "a law firm", "a pizza place", "a gas station", "a grocery store", "a factory",
    "a startup", "a group home", "a salon", "a coffee shop", "a nonprofit",
)
GENERIC_SCHOOLS = (
    "community college", "a vocational program", "night classes", "a GED program",
    "public school", "Catholic school", "boarding school", "special education classes",
    "a trade school", "college for one semester",
)
GENERIC_PLACES = (
    "a group home", "a shelter", "her aunt's house", "the suburbs", "the city",
    "a sober house", "foster care", "a halfway house", "his parents' basement",
    "an apartment", "the South", "the Midwest", "a rural town", "the projects",
)
NATIONALITIES = (
    "Haitian", "Irish", "Italian", "Puerto Rican", "Dominican", "Brazilian",
    "Cape Verdean", "Vietnamese", "Chinese", "Mexican", "Salvadoran", "Russian",
    "Jamaican", "Portuguese", "Greek", "Polish", "Korean", "Indian", "Nigerian",
)
LANGUAGES = ("Spanish", "Portuguese", "Haitian Creole", "English", "Vietnamese",
             "Mandarin", "Cantonese", "Russian", "Italian", "Polish", "French")
NON_PHI_CAPITALISED_2016 = (
    "AA", "NA", "CBT", "DBT", "Narcan", "Tylenol", "Section 12", "DSS", "DCF",
    "SSDI", "Medicaid", "Medicare", "GED", "EMDR", "ACT team", "Suboxone",
)
SCHOOL_KINDS = (
    "High School", "Middle School", "Elementary", "Community College",
    "State University", "College", "Academy", "Technical Institute",
    "Vocational High", "Charter School",
)
SCHOOL_PREFIXED = ("University of", "College of")

# Other locations the guidelines call LOCATION-OTHER.
LOCATION_OTHER = (
    "Cape Cod", "the Cape", "Martha's Vineyard", "Nantucket", "the North Shore",
    "the South Shore", "Fenway Park", "the Berkshires", "Logan Airport",
    "Long Island", "Appalachian Trail", "Yellowstone", "Disney World",
    "Central Park", "the Bronx", "Dorchester", "Roxbury", "Mattapan",
    "Jamaica Plain", "South Boston", "East Boston", "Chinatown",
)

# --- professions ------------------------------------------------------------

# Professions as patients state them, free text, some multi-word.
PROFESSIONS = (
    "barista", "cashier", "truck driver", "bus driver", "cab driver", "nurse",
    "RN", "CNA", "LPN", "home health aide", "personal care attendant",
    "teacher", "teacher's aide", "substitute teacher", "professor",
    "accountant", "bookkeeper", "paralegal", "lawyer", "attorney",
    "police officer", "firefighter", "EMT", "paramedic", "security guard",
    "corrections officer", "mail carrier", "electrician", "plumber",
    "carpenter", "painter", "roofer", "mason", "welder", "machinist",
    "mechanic", "auto mechanic", "construction worker", "laborer",
    "landscaper", "janitor", "custodian", "housekeeper", "cook", "line cook",
    "chef", "dishwasher", "waitress", "waiter", "bartender", "server",
    "hairdresser", "barber", "cosmetologist", "nail technician", "pharmacist",
    "pharmacy technician", "medical assistant", "dental hygienist",
    "social worker", "case manager", "counselor", "software engineer",
    "programmer", "web developer", "IT consultant", "engineer",
    "civil engineer", "architect", "graphic designer", "photographer",
    "musician", "artist", "writer", "journalist", "editor", "actor",
    "salesman", "sales representative", "real estate agent", "banker",
    "bank teller", "financial analyst", "consultant", "manager",
    "store manager", "project manager", "administrative assistant",
    "secretary", "receptionist", "customer service representative",
    "call center worker", "warehouse worker", "forklift operator",
    "delivery driver", "stocker", "retail clerk", "grocery clerk",
    "daycare worker", "nanny", "babysitter", "tutor", "librarian",
    "pastor", "minister", "soldier", "Marine", "veteran", "fisherman",
    "farmer", "factory worker", "assembly line worker", "seamstress",
    "tailor", "butcher", "baker", "pizza delivery", "Uber driver",
    "dog walker", "personal trainer", "coach", "lifeguard", "research assistant",
    "lab technician", "phlebotomist", "respiratory therapist", "physical therapist",
    "translator", "interpreter", "flight attendant", "pilot", "longshoreman",
    "stagehand", "bouncer", "DJ", "tattoo artist", "video game tester",
)

# Professions as phrases wrapped around the tagged span ("worked in
# [construction]").
PROFESSION_FIELDS = (
    "construction", "landscaping", "food service", "retail", "IT",
    "sales", "real estate", "insurance", "healthcare", "childcare",
    "the restaurant business", "roofing", "trucking", "finance", "marketing",
)

# --- non-PHI vocabulary -------------------------------------------------------

DRUGS_2014 = (
    ("metformin", "500 mg", "bid"), ("metformin", "1000 mg", "bid"),
    ("glyburide", "5 mg", "qd"), ("glipizide", "10 mg", "bid"),
    ("NPH insulin", "20 units", "qam"), ("NPH", "18 u", "qhs"),
    ("Lantus", "30 units", "qhs"), ("Humalog", "6 units", "ac"),
    ("lisinopril", "20 mg", "qd"), ("atenolol", "50 mg", "qd"),
    ("metoprolol", "25 mg", "bid"), ("Toprol XL", "100 mg", "qd"),
    ("aspirin", "81 mg", "qd"), ("ASA", "325 mg", "daily"),
    ("Plavix", "75 mg", "qd"), ("Lipitor", "40 mg", "qhs"),
    ("simvastatin", "20 mg", "qhs"), ("HCTZ", "25 mg", "qd"),
    ("Lasix", "40 mg", "bid"), ("furosemide", "20 mg", "qd"),
    ("nitroglycerin", "0.4 mg", "SL prn"), ("Imdur", "30 mg", "qd"),
    ("warfarin", "5 mg", "qd"), ("Coumadin", "2.5 mg", "qhs"),
    ("amlodipine", "5 mg", "qd"), ("Norvasc", "10 mg", "qd"),
    ("pioglitazone", "30 mg", "qd"), ("Avandia", "4 mg", "qd"),
    ("losartan", "50 mg", "qd"), ("KCl", "20 mEq", "qd"),
    ("digoxin", "0.125 mg", "qd"), ("Zocor", "40 mg", "qd"),
    ("Protonix", "40 mg", "qd"), ("Neurontin", "300 mg", "tid"),
)
DRUGS_2016 = (
    ("sertraline", "50 mg"), ("Zoloft", "100 mg"), ("fluoxetine", "20 mg"),
    ("Prozac", "40 mg"), ("citalopram", "20 mg"), ("Lexapro", "10 mg"),
    ("bupropion", "150 mg"), ("Wellbutrin XL", "300 mg"),
    ("venlafaxine", "75 mg"), ("Effexor", "150 mg"), ("duloxetine", "60 mg"),
    ("mirtazapine", "15 mg"), ("trazodone", "50 mg"), ("lithium", "300 mg"),
    ("Depakote", "500 mg"), ("lamotrigine", "100 mg"), ("Lamictal", "25 mg"),
    ("quetiapine", "100 mg"), ("Seroquel", "50 mg"), ("olanzapine", "10 mg"),
    ("Zyprexa", "5 mg"), ("risperidone", "1 mg"), ("Abilify", "5 mg"),
    ("aripiprazole", "10 mg"), ("Haldol", "5 mg"), ("clonazepam", "0.5 mg"),
    ("Klonopin", "1 mg"), ("lorazepam", "1 mg"), ("Ativan", "0.5 mg"),
    ("Xanax", "0.25 mg"), ("buspirone", "10 mg"), ("hydroxyzine", "25 mg"),
    ("gabapentin", "300 mg"), ("prazosin", "1 mg"), ("Adderall", "20 mg"),
    ("Ritalin", "10 mg"), ("naltrexone", "50 mg"), ("Suboxone", "8 mg"),
    ("methadone", "80 mg"), ("Vivitrol", "380 mg"), ("Ambien", "10 mg"),
)
LABS = (
    ("Na", 133, 146, 0), ("K", 3.2, 5.4, 1), ("Cl", 96, 110, 0),
    ("CO2", 20, 31, 0), ("BUN", 8, 48, 0), ("Cr", 0.6, 2.8, 1),
    ("Glu", 70, 390, 0), ("HbA1c", 5.6, 11.8, 1), ("A1c", 5.8, 10.9, 1),
    ("Chol", 120, 290, 0), ("LDL", 60, 190, 0), ("HDL", 25, 80, 0),
    ("TG", 70, 450, 0), ("WBC", 3.5, 14.0, 1), ("Hct", 28.0, 48.0, 1),
    ("Hgb", 9.0, 16.5, 1), ("Plt", 120, 420, 0), ("ALT", 10, 90, 0),
    ("AST", 10, 80, 0), ("TSH", 0.4, 6.2, 2), ("CK", 40, 380, 0),
    ("Trop", 0.01, 0.5, 2), ("BNP", 30, 1400, 0), ("INR", 0.9, 3.4, 1),
    ("Mg", 1.5, 2.6, 1), ("Ca", 8.2, 10.6, 1), ("Alb", 2.8, 4.8, 1),
    ("UA prot", 0, 300, 0), ("microalb", 5, 290, 0),
)
CONDITIONS_2014 = (
    "diabetes mellitus type 2", "DM2", "type 2 diabetes", "IDDM",
    "hypertension", "HTN", "hyperlipidemia", "hypercholesterolemia",
    "coronary artery disease", "CAD", "s/p MI", "CHF", "atrial fibrillation",
    "peripheral vascular disease", "PVD", "CKD stage 3", "diabetic nephropathy",
    "peripheral neuropathy", "retinopathy", "obesity", "OSA", "GERD",
    "COPD", "asthma", "hypothyroidism", "gout", "osteoarthritis", "depression",
    "anemia", "s/p CABG", "s/p PCI with stent to LAD", "carotid stenosis",
)
PROCEDURES_2014 = (
    "cardiac cath", "ETT", "exercise tolerance test", "echo", "TTE",
    "stress test", "CABG", "PTCA", "carotid ultrasound", "colonoscopy",
    "ABI", "dobutamine echo", "Holter monitor", "MIBI", "angiogram",
)
SYMPTOMS_2016 = (
    "low mood", "anhedonia", "poor sleep", "early morning awakening",
    "decreased appetite", "poor concentration", "hopelessness",
    "passive SI", "racing thoughts", "irritability", "panic attacks",
    "nightmares", "flashbacks", "hypervigilance", "AH", "paranoia",
    "guilt", "low energy", "crying spells", "social withdrawal",
    "impulsivity", "mood swings", "worry", "restlessness",
)
DIAGNOSES_2016 = (
    "MDD, recurrent, severe", "major depressive disorder", "bipolar I disorder",
    "bipolar II", "GAD", "panic disorder", "PTSD", "ADHD", "OCD",
    "schizoaffective disorder", "alcohol use disorder, severe",
    "opioid use disorder, in early remission", "cannabis use disorder",
    "borderline personality traits", "adjustment disorder",
    "persistent depressive disorder", "social anxiety disorder",
)
SUBSTANCES = (
    "alcohol", "EtOH", "marijuana", "cannabis", "cocaine", "crack",
    "heroin", "opioids", "oxycodone", "percocet", "benzos", "xanax",
    "methamphetamine", "ecstasy", "LSD", "mushrooms", "tobacco", "cigarettes",
    "vaping", "K2",
)
RELATIVES = (
    "mother", "father", "sister", "brother", "maternal aunt", "paternal uncle",
    "maternal grandmother", "paternal grandfather", "cousin", "half-brother",
    "stepfather", "son", "daughter", "older sister", "younger brother",
)
# Life events told with the age they happened at ("got sober at [27]"), and
# daily routines told with a clock time ("gets up at 11"): the same "at N",
# told apart only by the verb, and each verb is seen a few times at most.
LIFE_EVENTS = (
    "got married", "got divorced", "had a first drink", "first got drunk", "started smoking",
    "joined the Army", "joined the Navy", "left home", "was adopted", "lost a parent",
    "lost a grandparent", "was first hospitalized", "made a first suicide attempt", "got sober",
    "had a miscarriage", "became a father", "became a mother", "dropped out of school",
    "was arrested", "went to juvenile detention", "moved in with a partner", "started cutting",
    "was diagnosed with ADHD", "tried cocaine", "started using heroin", "was raped",
    "came out to family", "had a car accident", "had a concussion", "started therapy",
    "was put on Ritalin", "got a GED", "bought a house", "retired", "was laid off",
    "went into foster care", "ran away from home", "overdosed", "had a stroke", "was widowed",
)
DAILY_ROUTINES = (
    "gets up", "wakes", "goes to bed", "has lunch", "takes the bus", "picks up the kids",
    "starts work", "gets home", "walks the dog", "has the first drink", "takes trazodone",
    "goes to the gym", "calls mom", "calls the sponsor", "eats dinner", "naps",
    "leaves for work", "takes a shower", "watches TV until", "falls asleep",
)
SEASONS = ("spring", "summer", "fall", "winter")
HOLIDAYS = ("Christmas", "Thanksgiving", "Easter", "New Year's", "Memorial Day",
            "Labor Day", "the 4th of July", "Halloween", "Valentine's Day")
# Holidays a training set sees seldom (boosted in test splits).
HOLIDAYS_RARE = ("Xmas", "Christmas Eve", "New Year's Eve", "Mother's Day", "Father's Day",
                 "Easter Sunday", "MLK Day", "Presidents' Day", "Veterans Day", "Columbus Day",
                 "Hanukkah", "Passover", "Yom Kippur", "Eid", "Diwali",
                 "Chinese New Year", "Good Friday", "St. Patrick's Day", "Patriots' Day")
WEEKDAYS_ABBR = ("Mon", "Tues", "Wed", "Thurs", "Fri", "Sat", "Sun")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
            "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December")
MONTHS_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
               "Oct", "Nov", "Dec")
MONTHS_ABBR_DOT = ("Jan.", "Feb.", "Mar.", "Apr.", "May", "June", "July", "Aug.",
                   "Sept.", "Oct.", "Nov.", "Dec.")
NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
    "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
)
TENS_WORDS = {20: "twenty", 30: "thirty", 40: "forty", 50: "fifty",
              60: "sixty", 70: "seventy", 80: "eighty", 90: "ninety"}

# Capitalised non-PHI words that look like names: eponyms, brands, programs.
EPONYMS = (
    "Parkinson's disease", "Crohn's disease", "Hashimoto's thyroiditis", "Alzheimer's",
    "Graves' disease", "Barrett's esophagus", "Bell's palsy", "Raynaud's", "Addison's",
    "Cushing's syndrome", "Hodgkin's lymphoma", "Huntington's chorea", "Tourette's",
    "Asperger's", "Kawasaki disease", "Lyme disease", "Guillain-Barre", "Wernicke's",
    "Korsakoff's", "Dupuytren's contracture", "Baker's cyst", "Osgood-Schlatter",
    "Wilson's disease", "Addisonian crisis", "Cushing's disease", "Hodgkin lymphoma",
    "Barrett's", "Parkinsonism", "Graves disease", "Huntington disease",
)
CAPITALISED_TESTS_2014 = (
    "Holter", "Doppler", "MIBI", "Persantine MIBI", "Bruce protocol", "Foley", "Swan-Ganz",
    "Glucometer", "Accu-Chek", "One Touch", "Medicare", "Medicaid", "Mass Health",
    "Coumadin clinic", "Lantus SoloStar", "Lovenox", "Framingham score", "Norvasc", "Lipitor",
    "Plavix", "Zetia", "Actos", "Januvia", "Byetta", "Lasix", "Aldactone", "Coreg",
)
NON_PHI_CAPITALISED_2016_EXTRA = (
    "Beck Depression Inventory", "Columbia scale", "MoCA", "Seroquel", "Ativan", "Klonopin",
    "Wellbutrin", "Lamictal", "Vivitrol", "Alcoholics Anonymous", "Narcotics Anonymous",
    "Section 8 housing", "Social Security", "Big Brothers", "Boy Scouts", "Girl Scouts",
    "Bible study", "Ramadan", "Lent", "the Bible", "Facebook", "Instagram", "Xbox",
)
